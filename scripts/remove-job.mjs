#!/usr/bin/env node
// `npm run remove:job -- <name>…`: the inverse of `npm run new:job`. Removes each type's file in
// libs/jobs/src, its registry entry and re-exports, its own tests (libs/jobs/src/<file>.spec.ts,
// test/**/<name>.e2e-spec.ts and test/**/<name>.cases.ts, cases another suite runs), its rows in
// README.md and docs/*.md (table rows and list items that start with the name or cite one of its
// files; a measured row of docs/benchmarks.md is said to be one) and the dependencies only it used
// (scripts/package-deps.mjs). Refuses, naming file:line, while other code still uses a type; it never
// edits other code or another test's logic. Everything is checked before anything is written; prose
// in the docs that still cites a removed file is listed.
//
// What counts as a use, in apps/ libs/ test/ bench/ scripts/ docker/ deploy/ .ci/ and the root's
// config files: in JavaScript and TypeScript (read with the TypeScript parser, so comments don't
// count), a string equal to the name ('sum', JobOf<'sum'>), a path to the type's file
// ('./sum.job'), an API path (`/v1/jobs/sum`), the name quoted inside a string ('{"type":"sum"}'),
// or an import from @app/jobs of a name the type's file exports; in manifests and other config, the
// name in quotes that is not a key. The bare word is not a use: `sum` and `sort` are common words.
// A property named like the type (`byType.sum`) is not seen: the build and the tests are. A string
// that only looks like a type's name is marked with a comment `remove:job: not a job type`.
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, join } from 'node:path';
import { applyDependencyChanges, dependencyChanges, describeDependencyChanges } from './package-deps.mjs';

const root = join(import.meta.dirname ?? new URL('.', import.meta.url).pathname, '..');
const jobsDir = 'libs/jobs/src';
const registryFile = `${jobsDir}/registry.ts`;
const indexFile = `${jobsDir}/index.ts`;
const read = (file) => readFileSync(join(root, file), 'utf8');
const at = (file) => existsSync(join(root, file));

/** Where code may use a job type. */
const SCANNED = ['apps', 'libs', 'test', 'bench', 'scripts', 'docker', 'deploy', '.ci'];
// why: what the tools write (dist; bench/.build, the tests' bench/.build-*, patched builds in
// bench/.dist-*) follows the sources; bench/results is what the last `npm run bench` printed, quoted
// by the docs, not code that runs a type.
const SKIPPED = new Set(['node_modules', 'dist', '.git', 'bench/results', 'coverage']);
const GENERATED = /^bench\/\.(?:build|dist)/;
// why a marker: a word such as 'sum' is also a PromQL function; a comment with this text on the line or
// the one above says the string there is not the type.
const NOT_A_TYPE = 'remove:job: not a job type';
const CODE = /\.(?:[cm]?[jt]s)$/;
const CONFIG = /(?:\.(?:json|ya?ml|conf|env|sh|toml)|(?:^|\/)Dockerfile|^\.ci\/[^.]+)$/;

function fail(message) {
  console.error(`remove:job: ${message}`);
  process.exit(1);
}

const escape = (text) => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

/** Every file under `dir` (relative to the root), less what SKIPPED and GENERATED name. */
function walk(dir) {
  if (!at(dir)) return [];
  return readdirSync(join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = dir ? `${dir}/${entry.name}` : entry.name;
    if (SKIPPED.has(entry.name) || SKIPPED.has(path) || GENERATED.test(path)) return [];
    return entry.isDirectory() ? walk(path) : entry.isFile() ? [path] : [];
  });
}

/** JOB_NAME as defineJob checks it, read from its source so the two never disagree. */
function jobNameRule() {
  const literal = /^export const JOB_NAME = \/(.+)\/([a-z]*);$/m.exec(read(`${jobsDir}/define-job.ts`));
  if (!literal) fail(`${jobsDir}/define-job.ts no longer declares \`export const JOB_NAME = /…/;\`; update scripts/remove-job.mjs`);
  return new RegExp(literal[1], literal[2]);
}

/** The file that declares job type `name` (`name: '…'` in a job file), if any. */
function declaringFile(name) {
  const declaration = new RegExp(`\\bname:\\s*['"\`]${escape(name)}['"\`]`);
  return readdirSync(join(root, jobsDir))
    .filter((file) => file.endsWith('.ts') && !file.endsWith('.spec.ts'))
    .find((file) => declaration.test(read(`${jobsDir}/${file}`)));
}

/** `source` without the import and export-from lines of `./<base>`, and the names they carried. */
function dropModuleLines(source, base) {
  const names = [];
  const line = new RegExp(`^(?:import|export)(?: type)? \\{([^}]*)\\} from '\\./${escape(base)}';\\n`, 'gm');
  const text = source.replace(line, (_, list) => {
    for (const part of list.split(',')) {
      const name = part.trim().replace(/^type\s+/, '').split(/\s+as\s+/).pop();
      if (name) names.push(name);
    }
    return '';
  });
  return { text, names };
}

/** registry.ts without `idents` in its lists, keeping each list's layout (one line, or one entry a line). */
function dropFromLists(source, idents) {
  return source.replace(/(= \[)([^\]]*)(\])/g, (whole, open, inner, close) => {
    const entries = inner.split(',').map((entry) => entry.trim()).filter(Boolean);
    const kept = entries.filter((entry) => !idents.includes(entry));
    if (kept.length === entries.length) return whole;
    if (!inner.includes('\n')) return `${open}${kept.join(', ')}${close}`;
    const indent = /\n([ \t]+)\S/.exec(inner)?.[1] ?? '  ';
    return `${open}\n${kept.map((entry) => `${indent}${entry},\n`).join('')}${close}`;
  });
}

/** A test for a line of markdown that cites one of `files` (by its path, or its name after a `/`, a quote or a space). */
function citing(files) {
  const alternatives = [...new Set(files.flatMap((file) => [file, basename(file)]))].map(escape).join('|');
  return new RegExp(`(?:^|[\\s\`'"(/\\[])(?:${alternatives})(?=[\`'")\\]\\s#:,.;]|$)`);
}

/**
 * Lines of README.md and docs/*.md that document one of `names`: table rows and list items starting
 * with it or citing one of its files (`own`); and the other lines that still cite those files.
 */
function docEdits(names, own) {
  const files = ['README.md', ...walk('docs').filter((file) => file.endsWith('.md'))].filter(at);
  const alternatives = names.map(escape).join('|');
  const row = new RegExp(`^\\|\\s*\\**\`(?:${alternatives})\`(?=[\\s|*:(,])`);
  const item = new RegExp(`^(\\s*)(?:[-*+]|\\d+[.)])\\s+\\**\`(?:${alternatives})\`(?=[\\s*:(,.—–-]|$)`);
  const anyItem = /^(\s*)(?:[-*+]|\d+[.)])\s+/;
  const cites = citing(own);
  const edits = [];
  const citations = [];
  for (const file of files) {
    const lines = read(file).split('\n');
    const dropped = [];
    for (let i = 0; i < lines.length; i++) {
      if (row.test(lines[i]) || (lines[i].startsWith('|') && cites.test(lines[i]))) {
        dropped.push(i);
        continue;
      }
      const listed = item.exec(lines[i]) ?? anyItem.exec(lines[i]);
      if (!listed) continue;
      // A list item goes with its continuation lines and nested items (indented deeper, up to a blank line).
      let end = i;
      while (end + 1 < lines.length && lines[end + 1].trim() && /^\s*/.exec(lines[end + 1])[0].length > listed[1].length) end++;
      if (item.test(lines[i]) || lines.slice(i, end + 1).some((line) => cites.test(line))) {
        for (let j = i; j <= end; j++) dropped.push(j);
        // A list of that one item goes with one of the blank lines around it.
        if (!lines[i - 1]?.trim() && end + 1 < lines.length && !lines[end + 1].trim()) dropped.push(++end);
      }
      i = end;
    }
    lines.forEach((line, i) => {
      if (!dropped.includes(i) && cites.test(line)) citations.push(`  ${file}:${i + 1}  ${line.trim().slice(0, 120)}`);
    });
    if (dropped.length) edits.push({ file, lines: dropped.map((i) => i + 1), text: lines.filter((_, i) => !dropped.includes(i)).join('\n') });
  }
  return { edits, citations };
}

/** Tests for a use of a type in one string's text. */
function stringUses(types) {
  const tests = types.flatMap(({ name, base }) => [
    (text) => text === name,
    (text) => new RegExp(`(?:^|/)${escape(base)}(?:\\.[cm]?[jt]s)?$`).test(text),
    (text) => new RegExp(`(?:^|/)jobs/${escape(name)}(?:[/?#]|$)`).test(text),
    (text) => new RegExp(`(["'\`])${escape(name)}\\1`).test(text),
  ]);
  return (text) => tests.some((test) => test(text));
}

/** Lines of a JavaScript or TypeScript file that use one of the types. */
function codeUses(ts, file, text, isUse, exported) {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, /\.[cm]?js$/.test(file) ? ts.ScriptKind.JS : ts.ScriptKind.TS);
  const lines = new Set();
  const mark = (node) => lines.add(source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1);
  const STRINGS = new Set([
    ts.SyntaxKind.StringLiteral,
    ts.SyntaxKind.NoSubstitutionTemplateLiteral,
    ts.SyntaxKind.TemplateHead,
    ts.SyntaxKind.TemplateMiddle,
    ts.SyntaxKind.TemplateTail,
  ]);
  const visit = (node) => {
    if (STRINGS.has(node.kind) && isUse(node.text)) {
      // A string over several lines (a page, a script) is reported at the lines that hold the use.
      const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const inside = node.getText(source).split('\n').flatMap((line, i) => (isUse(line) ? [first + i + 1] : []));
      for (const line of inside.length ? inside : [first + 1]) lines.add(line);
    }
    // A name the type's file exports, imported through the lib's index.
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier && /^@app\/jobs$|libs\/jobs\/src(?:\/index)?$/.test(node.moduleSpecifier.text)) {
      const bindings = ts.isImportDeclaration(node) ? node.importClause?.namedBindings : node.exportClause;
      for (const element of bindings?.elements ?? []) if (exported.has((element.propertyName ?? element.name).text)) mark(element);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return [...lines];
}

/** Lines of a manifest or config file that quote one of the names as a value. */
function configUses(text, names) {
  const quoted = new RegExp(`(["'])(?:${names.map(escape).join('|')})\\1(?!\\s*:)|/jobs/(?:${names.map(escape).join('|')})\\b`);
  return text.split('\n').flatMap((line, i) => (quoted.test(line) ? [i + 1] : []));
}

function main() {
  const args = process.argv.slice(2);
  const dryRun = args.includes('--dry-run');
  const names = [...new Set(args.filter((arg) => arg !== '--dry-run'))];
  if (names.length === 0 || names.some((name) => name.startsWith('-'))) {
    fail(`usage: npm run remove:job -- <name>… [--dry-run]   (e.g. npm run remove:job -- sort markdown)${args.length ? `; got ${args.map((a) => JSON.stringify(a)).join(' ')}` : ''}`);
  }
  const rule = jobNameRule();
  const types = names.map((name) => {
    if (!rule.test(name)) fail(`"${name}" is not a job type name (${rule})`);
    const file = declaringFile(name);
    if (!file) fail(`no job type "${name}": no file in ${jobsDir} declares name: '${name}'`);
    return { name, file: `${jobsDir}/${file}`, base: file.replace(/\.ts$/, '') };
  });

  // The type's own files: its declaration, the spec beside it, end-to-end tests named after it.
  const own = new Set(
    types.flatMap(({ name, file, base }) => [
      file,
      ...[`${jobsDir}/${base}.spec.ts`].filter(at),
      ...walk('test').filter((path) => basename(path) === `${name}.e2e-spec.ts` || basename(path) === `${name}.cases.ts`),
    ]),
  );

  let registry = read(registryFile);
  const idents = [];
  for (const { base } of types) {
    const dropped = dropModuleLines(registry, base);
    registry = dropped.text;
    idents.push(...dropped.names);
  }
  registry = dropFromLists(registry, idents);
  const coreJobs = /export const coreJobs = \[([^\]]*)\]/.exec(registry);
  if (coreJobs && !coreJobs[1].trim()) fail(`that would leave no job type in coreJobs (${registryFile}); the apps refuse to start without one. Add your own first (npm run new:job -- <name>)`);
  let index = read(indexFile);
  const exported = new Set();
  for (const { base } of types) {
    const dropped = dropModuleLines(index, base);
    index = dropped.text;
    for (const name of dropped.names) exported.add(name);
  }
  const edited = new Map([
    [registryFile, registry],
    [indexFile, index],
  ]);

  const ts = createRequire(join(root, 'package.json'))('typescript');
  const isUse = stringUses(types);
  const rootFiles = readdirSync(root, { withFileTypes: true }).filter((e) => e.isFile() && e.name !== 'package-lock.json').map((e) => e.name);
  const projectFiles = [...rootFiles, ...SCANNED.flatMap(walk)];
  const uses = [];
  for (const file of projectFiles) {
    if (own.has(file)) continue;
    const text = edited.get(file) ?? read(file);
    const lines = CODE.test(file) ? codeUses(ts, file, text, isUse, exported) : CONFIG.test(file) ? configUses(text, names) : [];
    const shown = text.split('\n');
    for (const line of lines) {
      if (`${shown[line - 2] ?? ''}${shown[line - 1]}`.includes(NOT_A_TYPE)) continue;
      uses.push(`  ${file}:${line}  ${shown[line - 1].trim().slice(0, 140)}`);
    }
  }
  if (uses.length) {
    fail(
      [
        `refusing: other code still uses ${names.map((n) => `"${n}"`).join(', ')}; nothing was changed.`,
        ...uses,
        'Move these to another type, delete them, or remove the types they belong to in the same command.',
      ].join('\n'),
    );
  }

  const { edits: docs, citations } = docEdits(names, [...own]);
  const dependencies = dependencyChanges(root, [...own], projectFiles.filter((file) => !own.has(file)), read);
  // why say so: the other rows of a results table were measured with the type there, and the bench does not measure it any more.
  const measured = (file) => (file === 'docs/benchmarks.md' ? ': measured results, left as the last `npm run bench` printed them; run it again to measure the service as it is now' : '');
  const plan = [
    ...[...own].map((file) => `  removed ${file}`),
    `  edited  ${registryFile}   ${idents.length ? `${idents.join(', ')} out of its imports and lists` : 'nothing to change'}`,
    ...(exported.size ? [`  edited  ${indexFile}   no longer exports ${[...exported].join(', ')}`] : []),
    ...docs.map(({ file, lines }) => `  edited  ${file}   removed line${lines.length > 1 ? 's' : ''} ${lines.join(', ')}${measured(file)}`),
    ...describeDependencyChanges(dependencies),
  ];
  const cited = citations.length ? ['Docs that still cite a removed file (edit them):', ...citations] : [];
  if (dryRun) {
    console.log([`remove:job: would remove ${names.join(', ')} (--dry-run: nothing was changed):`, ...plan, ...cited].join('\n'));
    return;
  }
  for (const file of own) rmSync(join(root, file));
  for (const [file, text] of edited) writeFileSync(join(root, file), text);
  for (const { file, text } of docs) writeFileSync(join(root, file), text);
  const lockProblem = applyDependencyChanges(root, dependencies);

  // What still names a type in prose or comments: no use, but maybe worth a look.
  const mention = new RegExp(`[\`'"](?:${names.map(escape).join('|')})[\`'"]`);
  const mentions = ['README.md', ...['docs', ...SCANNED].flatMap(walk)]
    .filter((file) => at(file) && (file.endsWith('.md') || CODE.test(file)) && file !== 'scripts/remove-job.mjs')
    .flatMap((file) => read(file).split('\n').flatMap((line, i) => (mention.test(line) && !line.includes(NOT_A_TYPE) ? [`  ${file}:${i + 1}`] : [])));
  console.log(
    [
      `remove:job: removed job type${names.length > 1 ? 's' : ''} ${names.map((n) => `"${n}"`).join(', ')}:`,
      ...plan,
      ...cited,
      ...(mentions.length ? ['Still named in comments or prose (not a use; edit as you see fit):', ...mentions] : []),
      '',
      'Next: npm run build && npm test',
    ].join('\n'),
  );
  if (lockProblem) fail(lockProblem);
}

main();
