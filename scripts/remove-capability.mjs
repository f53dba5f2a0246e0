#!/usr/bin/env node
// `npm run remove:capability -- <name>… [--dry-run]`: drops optional capabilities for good, as the
// table of docs/development.md#removing-a-capability lists them (this reads that table): each one's
// folder, its import and its line in the app modules that list it, its own tests, its guide sections
// (the Guide column) with the table rows and list items of README.md and docs/ that link into them or
// cite its files, and the dependencies only it used (scripts/package-deps.mjs). Other links into a
// removed section become plain text and are listed, as is prose that still cites a removed file.
// Refuses, naming file:line, while code outside the capability imports from its folder. Everything
// is checked before anything is written.
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { applyDependencyChanges, dependencyChanges, describeDependencyChanges } from './package-deps.mjs';

const root = join(import.meta.dirname ?? new URL('.', import.meta.url).pathname, '..');
const read = (file) => readFileSync(join(root, file), 'utf8');
const at = (file) => existsSync(join(root, file));
const GUIDE = 'docs/development.md';
const SCANNED = ['apps', 'libs', 'test', 'bench', 'scripts', 'docker', 'deploy', '.ci'];
const SKIPPED = new Set(['node_modules', 'dist', '.git', 'coverage']);
const GENERATED = /^bench\/\.(?:build|dist)/;
const CODE = /\.(?:[cm]?[jt]s)$/;
// why: their rows document what stays, the capability's variables (read, unused) and its Kubernetes component.
const KEEP_ROWS = new Set(['docs/configuration.md', 'docs/deploy.md']);
const escape = (text) => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

function fail(message) {
  console.error(`remove:capability: ${message}`);
  process.exit(1);
}

/** Every file under `dir` (relative to the root), less what tools generate. */
function walk(dir) {
  if (!at(dir)) return [];
  return readdirSync(join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = dir ? `${dir}/${entry.name}` : entry.name;
    if (SKIPPED.has(entry.name) || GENERATED.test(path)) return [];
    return entry.isDirectory() ? walk(path) : entry.isFile() ? [path] : [];
  });
}

/** `[text](target)` links of a markdown line, their targets resolved from `file` (`docs/api.md#webhooks`). */
function links(file, line) {
  return [...line.matchAll(/\[([^\]]*)\]\(([^)\s]+)\)/g)]
    .filter(([, , target]) => !/^[a-z][a-z0-9+.-]*:/i.test(target))
    .map(([whole, text, target]) => {
      const [path, anchor] = target.split('#');
      const resolved = path ? normalize(join(dirname(file), path)) : file;
      return { whole, text, target: anchor === undefined ? resolved : `${resolved}#${anchor}` };
    });
}

/** The capabilities the development guide lists: name, folder, module, its own tests, its guide sections. */
function listed() {
  const text = read(GUIDE);
  const section = text.slice(text.indexOf('## Removing a capability'));
  return new Map(
    [...section.matchAll(/^\| ([a-z-]+) \| `([^`]+)` \| `(\w+)` \| (.+?) \| (.+) \|$/gm)].map(([, name, folder, module, tests, guide]) => [
      name,
      { name, folder, module, tests: [...tests.matchAll(/`([^`]+)`/g)].map((m) => m[1]), sections: links(GUIDE, guide).map((l) => l.target) },
    ]),
  );
}

/** GitHub's anchor for a heading's text. */
const slug = (heading) =>
  heading
    .replace(/[`*]/g, '')
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');

/** The lines of `file` that make up section `anchor`: its heading to the next heading of its level or above. */
function sectionLines(file, anchor) {
  const lines = read(file).split('\n');
  let fence = false;
  for (let i = 0; i < lines.length; i++) {
    if (/^\s*```/.test(lines[i])) fence = !fence;
    const heading = !fence && /^(#{1,6}) (.*)$/.exec(lines[i]);
    if (!heading || slug(heading[2]) !== anchor) continue;
    let end = i + 1;
    let inner = false;
    for (; end < lines.length; end++) {
      if (/^\s*```/.test(lines[end])) inner = !inner;
      const next = !inner && /^(#{1,6}) /.exec(lines[end]);
      if (next && next[1].length <= heading[1].length) break;
    }
    return Array.from({ length: end - i }, (_, k) => i + k);
  }
  return undefined;
}

function main() {
  const args = process.argv.slice(2);
  const dryRun = args.includes('--dry-run');
  const names = [...new Set(args.filter((arg) => arg !== '--dry-run'))];
  const known = listed();
  if (names.length === 0 || names.some((name) => name.startsWith('-'))) {
    fail(`usage: npm run remove:capability -- <name>… [--dry-run]   (one of ${[...known.keys()].join(', ')})`);
  }
  const removed = names.map((name) => {
    const capability = known.get(name);
    if (!capability) fail(`no capability "${name}" in ${GUIDE}#removing-a-capability (it lists ${[...known.keys()].join(', ')})`);
    if (!at(capability.folder)) fail(`${name}: ${capability.folder} is not there; was it removed already?`);
    return capability;
  });

  // Its own files: the folder and its tests.
  const own = new Set(removed.flatMap(({ folder, tests }) => [...walk(folder), ...tests.filter(at)]));
  const folders = removed.map(({ folder }) => folder);
  const inFolder = (path) => folders.some((folder) => path === folder || path.startsWith(`${folder}/`));
  const rootFiles = readdirSync(root, { withFileTypes: true }).filter((e) => e.isFile() && e.name !== 'package-lock.json').map((e) => e.name);
  const projectFiles = [...rootFiles, ...SCANNED.flatMap(walk)];
  const kept = projectFiles.filter((file) => !own.has(file));

  // The app modules that list each module: its import and its one line in the module list go.
  const edited = new Map();
  const wired = new Set();
  const uses = [];
  for (const file of kept.filter((f) => CODE.test(f))) {
    let text = edited.get(file) ?? read(file);
    for (const { module, folder } of removed) {
      const importLine = new RegExp(`^import \\{ ${module} \\} from '([^']+)';\\n`, 'm').exec(text);
      if (!importLine || !/\.module\.ts$/.test(file)) continue;
      text = text.replace(importLine[0], '');
      const entry = new RegExp(`^ +.*\\b${module}\\b.*,\\n`, 'm');
      if ((text.match(new RegExp(entry.source, 'gm')) ?? []).length !== 1) fail(`${file}: expected one line of its module list to name ${module}; remove ${folder} by hand`);
      text = text.replace(entry, '');
      edited.set(file, text);
      wired.add(module);
    }
    // Any other import from a removed folder is a use: refuse.
    text.split('\n').forEach((line, i) => {
      for (const [, specifier] of line.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|\brequire\s*\(\s*)['"]([^'"]+)['"]/g)) {
        const target = specifier.startsWith('.') ? normalize(join(dirname(file), specifier)) : specifier.replace(/^@app\/([a-z-]+)/, 'libs/$1/src');
        if (inFolder(target)) uses.push(`  ${file}:${i + 1}  ${line.trim().slice(0, 140)}`);
      }
    });
  }
  if (uses.length) fail([`refusing: other code still imports from ${folders.join(', ')}; nothing was changed.`, ...uses].join('\n'));
  for (const { module, folder } of removed) if (!wired.has(module)) fail(`no app module imports ${module}; remove ${folder} by hand`);

  // The docs: its sections go, and what points into them or at its files.
  const sections = removed.flatMap(({ sections: s }) => s);
  const docFiles = ['README.md', ...walk('docs').filter((file) => file.endsWith('.md'))].filter(at);
  const gone = new Map(); // file → line numbers (0-based) of removed sections
  const goneGuides = []; // guides of their own, removed whole
  for (const target of sections) {
    const [file, anchor] = target.split('#');
    if (anchor === undefined) {
      if (!at(file)) fail(`${GUIDE} links ${target} as a guide, and there is no such file`);
      goneGuides.push(file);
      continue;
    }
    const lines = sectionLines(file, anchor);
    if (!lines) fail(`${GUIDE} links ${target} as a guide section, and there is no such heading`);
    gone.set(file, [...(gone.get(file) ?? []), ...lines]);
  }
  const removedPaths = [...own, ...folders];
  const cites = new RegExp(`(?:^|[\\s\`'"(/[])(?:${removedPaths.map(escape).join('|')})(?=[\`'")\\]\\s#:,.;/]|$)`);
  const intoGone = (file, line) => links(file, line).filter(({ target }) => sections.includes(target) || goneGuides.includes(target.split('#')[0]));
  const docs = [];
  const mentions = [];
  for (const file of docFiles.filter((f) => !goneGuides.includes(f))) {
    const lines = read(file).split('\n');
    const dropped = new Set(gone.get(file) ?? []);
    const sectionCount = dropped.size;
    let fenced = false;
    for (let i = 0; i < lines.length; i++) {
      if (/^\s*```/.test(lines[i])) fenced = !fenced;
      if (dropped.has(i)) continue;
      if (fenced) {
        // A listing's entry for a removed folder (README's "Where is what") goes with the lines indented under it.
        const entry = new RegExp(`^(\\s*)(?:${folders.map(escape).join('|')})/?(?:\\s|$)`).exec(lines[i]);
        if (!entry) continue;
        dropped.add(i);
        while (i + 1 < lines.length && /^\s*/.exec(lines[i + 1])[0].length > entry[1].length && !/^\s*```/.test(lines[i + 1])) dropped.add(++i);
        continue;
      }
      const points = (line) => intoGone(file, line).length > 0 || cites.test(line);
      if (lines[i].startsWith('|') && points(lines[i]) && !KEEP_ROWS.has(file)) {
        dropped.add(i);
        continue;
      }
      const item = /^(\s*)(?:[-*+]|\d+[.)])\s+/.exec(lines[i]);
      if (!item) continue;
      let end = i;
      while (end + 1 < lines.length && lines[end + 1].trim() && /^\s*/.exec(lines[end + 1])[0].length > item[1].length) end++;
      // An item that starts by pointing at what is gone is about it.
      const head = lines[i].slice(item[0].length);
      const first = links(file, head)[0];
      if (/^\**\[/.test(head) ? first !== undefined && sections.includes(first.target) : cites.test(head.slice(0, 80))) {
        for (let j = i; j <= end; j++) dropped.add(j);
      }
      i = end;
    }
    const text = [];
    lines.forEach((line, i) => {
      if (dropped.has(i)) return;
      let kept = line;
      for (const { whole, text: label } of intoGone(file, line)) kept = kept.replace(whole, label);
      if (kept !== line || cites.test(kept)) mentions.push(`  ${file}:${text.length + 1}  ${kept.trim().slice(0, 120)}`);
      text.push(kept);
    });
    const relinked = text.length + dropped.size === lines.length && text.some((line, i) => line !== lines.filter((_, j) => !dropped.has(j))[i]);
    if (dropped.size || relinked) {
      const parts = [sectionCount && `removed its guide section${sections.filter((t) => t.startsWith(`${file}#`)).length > 1 ? 's' : ''} (${sectionCount} lines)`, dropped.size > sectionCount && `removed ${dropped.size - sectionCount} lines pointing at it`, relinked && 'made links into it plain text'];
      docs.push({ file, note: parts.filter(Boolean).join(', '), text: text.join('\n') });
    }
  }

  const dependencies = dependencyChanges(root, [...own], kept, read);
  const plan = [
    ...removed.map(({ folder, tests }) => `  removed ${folder}/${tests.filter(at).map((t) => `, ${t}`).join('')}`),
    ...[...edited.keys()].map((file) => `  edited  ${file}   no longer imports ${removed.map((c) => c.module).filter((m) => read(file).includes(m)).join(', ')}`),
    ...goneGuides.map((file) => `  removed ${file}`),
    ...docs.map(({ file, note }) => `  edited  ${file}   ${note}`),
    ...describeDependencyChanges(dependencies),
  ];
  const left = mentions.length ? ['Still mentioned in the docs (links made plain text; edit as you see fit):', ...mentions] : [];
  if (dryRun) {
    console.log([`remove:capability: would remove ${names.join(', ')} (--dry-run: nothing was changed):`, ...plan, ...left].join('\n'));
    return;
  }
  for (const file of own) rmSync(join(root, file));
  for (const folder of folders) rmSync(join(root, folder), { recursive: true, force: true });
  for (const [file, text] of edited) writeFileSync(join(root, file), text);
  for (const file of goneGuides) rmSync(join(root, file));
  for (const { file, text } of docs) writeFileSync(join(root, file), text);
  const lockProblem = applyDependencyChanges(root, dependencies);
  console.log(
    [
      `remove:capability: removed ${names.join(', ')}:`,
      ...plan,
      ...left,
      'What stays: its variables in the config schema (read, unused), a Kubernetes component that sets them.',
      '',
      'Next: npm run build && npm test',
    ].join('\n'),
  );
  if (lockProblem) fail(lockProblem);
}

main();
