import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { readAcceptedEnv, readRepoFile, ROOT } from './deploy/app-source';

/**
 * The README and the guides in docs/ hold together: every relative link and anchor resolves, every
 * guide is linked from the README, and the configuration guide lists exactly the variables the apps
 * read. Reads files only: no build, no Redis.
 */
const PAGES = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
/** Pages the guides link to that are not guides themselves; their links must resolve too. */
const LINKED = ['bench/README.md', 'bench/results/history.md'];

/** Markdown without fenced code blocks (their `#` lines are comments, their brackets code). */
function prose(markdown: string): string {
  let fence: string | undefined;
  return markdown
    .split('\n')
    .map((line) => {
      const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
      if (marker && (!fence || (marker[0] === fence[0] && marker.length >= fence.length))) {
        fence = fence ? undefined : marker;
        return '';
      }
      return fence ? '' : line;
    })
    .join('\n');
}

/** The anchors GitHub gives a page's headings: github-slugger's rules on the heading's rendered text. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const slugs = new Set<string>();
  for (const [, heading] of prose(markdown).matchAll(/^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$/gm)) {
    const text = heading
      .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // a link or image: its text
      .replace(/[`*]|(^|\W)_+|_+(?=\W|$)/g, '$1'); // code and emphasis marks
    const base = text
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
      .replace(/ /g, '-');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    slugs.add(count === 0 ? base : `${base}-${count}`);
  }
  return slugs;
}

/** Relative link targets in prose (inline code and code blocks left out), with the line they are on. */
function links(markdown: string): Array<{ target: string; line: number }> {
  const text = prose(markdown).replace(/(`+)[\s\S]*?\1/g, (code) => code.replace(/[^\n]/g, ' '));
  return [...text.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)]
    .filter(([, target]) => !/^([a-z][a-z0-9+.-]*:|\/\/)/i.test(target))
    .map((m) => ({ target: m[1], line: text.slice(0, m.index).split('\n').length }));
}

describe('README and docs/', () => {
  it('has only links and anchors that resolve', () => {
    const broken: string[] = [];
    for (const page of [...PAGES, ...LINKED]) {
      for (const { target, line } of links(readRepoFile(page))) {
        const [path, anchor] = target.split('#', 2);
        const file = path ? join(dirname(join(ROOT, page)), decodeURIComponent(path)) : join(ROOT, page);
        const named = relative(ROOT, file);
        if (!existsSync(file)) broken.push(`${page}:${line}: ${target}: ${named} does not exist`);
        else if (anchor !== undefined && !file.endsWith('.md')) broken.push(`${page}:${line}: ${target}: an anchor into ${named}, which is not markdown`);
        else if (anchor !== undefined && !anchors(readFileSync(file, 'utf8')).has(anchor)) {
          broken.push(`${page}:${line}: ${target}: ${named} has no heading whose anchor is #${anchor}`);
        }
      }
    }
    expect(broken).toEqual([]);
  });

  it('links every guide from the README', () => {
    const linked = new Set(links(readRepoFile('README.md')).map(({ target }) => target.split('#')[0]));
    expect(PAGES.filter((page) => page !== 'README.md' && !linked.has(page))).toEqual([]);
  });

  it('documents in docs/configuration.md every environment variable the apps read, and no other', () => {
    const read = new Set(readAcceptedEnv().names);
    // why beyond the schema: a `process.env.X` anywhere in the apps is configuration too, unparsed.
    const sources = (dir: string): string[] =>
      readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
        const path = `${dir}/${entry.name}`;
        if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : sources(path);
        return /\.(ts|js|mjs|cjs)$/.test(entry.name) && !/\.spec\.ts$/.test(entry.name) ? [path] : [];
      });
    for (const file of [...sources('apps'), ...sources('libs')]) {
      for (const [, dotted, quoted] of readRepoFile(file).matchAll(/process\.env(?:\.([A-Z][A-Z0-9_]*)|\[\s*['"`]([A-Z][A-Z0-9_]*)['"`]\s*\])/g)) {
        read.add(dotted ?? quoted);
      }
    }
    const documented = new Set([...readRepoFile('docs/configuration.md').matchAll(/^\| `([A-Z][A-Z0-9_]*)` \|/gm)].map((m) => m[1]));
    expect([
      ...[...read].filter((name) => !documented.has(name)).map((name) => `${name}: read by the apps, missing from docs/configuration.md`),
      ...[...documented].filter((name) => !read.has(name)).map((name) => `${name}: in docs/configuration.md, read by no app`),
    ]).toEqual([]);
  });
});
