import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import ts from 'typescript';

/**
 * Comments name only what exists: an upper-case constant or variable that the code has, a file
 * that is there, and a `Class.member` whose class of ours has that member. A rename that forgot a
 * comment fails here with the comment's place (job-owners.ts named a constant of the worker long
 * after the worker's code called it ownersOutlive). Reads files only: no build, no Redis.
 */
const ROOT = join(__dirname, '..');
const DIRS = ['apps', 'libs', 'test', 'bench', 'scripts'];
const SKIP = new Set(['node_modules', 'dist', '.build', 'fixtures']);
/**
 * Build output bench/.gitignore keeps out of the tree: the tests' private builds (`.build-*`, the
 * bench smoke's while it runs beside this suite) and tuning copies (`.dist-*`).
 */
const skipped = (name: string) => SKIP.has(name) || /^\.(build|dist)-/.test(name);

function walk(dir: string, out: string[] = []): string[] {
  for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) {
      if (!skipped(entry.name)) walk(path, out);
    } else out.push(path);
  }
  return out;
}

interface Source {
  path: string;
  comments: Array<{ text: string; line: number }>;
  code: string;
}

/** A file's comments (each with its line) and its code without them, as TypeScript's scanner sees them. */
function split(path: string): Source {
  const text = readFileSync(join(ROOT, path), 'utf8');
  const file = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, false, path.endsWith('x') ? ts.ScriptKind.TSX : undefined);
  const ranges = new Map<number, ts.CommentRange>();
  const visit = (node: ts.Node) => {
    for (const range of [...(ts.getLeadingCommentRanges(text, node.pos) ?? []), ...(ts.getTrailingCommentRanges(text, node.end) ?? [])]) ranges.set(range.pos, range);
    node.forEachChild(visit);
  };
  visit(file);
  let code = '';
  let at = 0;
  const comments = [...ranges.values()]
    .sort((a, b) => a.pos - b.pos)
    .map((range) => {
      code += text.slice(at, range.pos);
      at = range.end;
      return { text: text.slice(range.pos, range.end), line: file.getLineAndCharacterOfPosition(range.pos).line + 1 };
    });
  return { path, comments, code: code + text.slice(at) };
}

const files = DIRS.flatMap((dir) => walk(dir));
const sources = files.filter((f) => /\.(ts|mts|cts|mjs|js)$/.test(f)).map(split);
const everyFile = [...files, ...walk('docs'), ...walk('docker'), ...readdirSync(ROOT).filter((f) => /\.\w+$/.test(f))];
const names = new Set(everyFile.map((f) => basename(f)));
const words = new Set(sources.flatMap((s) => s.code.match(/[A-Za-z_]\w*/g) ?? []));
/** Names built in code from a stem (`AB_DIST_${side}`): a comment may name the stem's family or a member. */
const stems = [...words].filter((w) => /^[A-Z][A-Z0-9_]*_$/.test(w));
/** Upper-case words comments use as words, not names: a spelling style, a placeholder of an example. */
const NOT_NAMES = new Set(['SCREAMING_SNAKE', 'FROM_NAME', 'TO_NAME']);
const known = (constant: string) => words.has(constant) || NOT_NAMES.has(constant) || stems.some((stem) => `${constant}_`.startsWith(stem) || constant.startsWith(stem));
/** The code of the file that declares each class of ours. */
const classes = new Map<string, string>();
for (const { code } of sources) for (const [, name] of code.matchAll(/\bclass\s+([A-Z]\w*)/g)) classes.set(name, code);
/** `file` resolves from the repository's root or from the directory of `path` or one above it. */
const resolves = (file: string, path: string) => {
  for (let dir = dirname(path); ; dir = dirname(dir)) {
    if (existsSync(join(ROOT, dir, file))) return true;
    if (dir === '.') return false;
  }
};

/** What a comment names that is not there, with where the comment is. */
function unknownNames({ path, comments }: Source): string[] {
  const problems: string[] = [];
  for (const { text, line } of comments) {
    const at = `${path}:${line}`;
    for (const [constant] of text.matchAll(/\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b/g)) {
      if (!known(constant)) problems.push(`${at} names ${constant}, which no code has`);
    }
    for (const [file] of text.matchAll(/(?<![\w@/.*-])(?:[\w-]+\/)*\w[\w.-]*\.(?:ts|mjs|js|md|ya?ml|json)\b/g)) {
      if (/^[\w-]+\.(json|js)$/.test(file)) continue; // package.json, fastify.js: a package's file, not a place of ours
      const found = file.startsWith('node_modules/') || (file.includes('/') ? resolves(file, path) : names.has(file));
      if (!found) problems.push(`${at} names ${file}, which is not in the tree`);
    }
    for (const [, type, member] of text.matchAll(/\b([A-Z][a-z]\w*)\.([a-z]\w*)\b/g)) {
      const code = classes.get(type);
      if (code !== undefined && !new RegExp(`\\b${member}\\b`).test(code)) problems.push(`${at} names ${type}.${member}, which ${type} does not have`);
    }
  }
  return problems;
}

describe('comments', () => {
  it('name only constants, files and members that exist', () => {
    expect(sources.length).toBeGreaterThan(200);
    expect(sources.flatMap(unknownNames)).toEqual([]);
  });

  it('catches a renamed constant, a moved file and a renamed member (the check itself can fail)', () => {
    // why spelled in parts: whole, the name would be in this file's code, and known.
    const gone = ['OWNERS', 'AFTER', 'FINISH'].join('_');
    const planted: Source = {
      path: 'apps/api/src/jobs/job-owners.ts',
      code: '',
      comments: [{ text: `// see ${gone} in the worker, test/nowhere.e2e-spec.ts and JobOwners.vanished`, line: 1 }],
    };
    expect(unknownNames(planted)).toEqual([
      `apps/api/src/jobs/job-owners.ts:1 names ${gone}, which no code has`,
      'apps/api/src/jobs/job-owners.ts:1 names test/nowhere.e2e-spec.ts, which is not in the tree',
      'apps/api/src/jobs/job-owners.ts:1 names JobOwners.vanished, which JobOwners does not have',
    ]);
  });
});

