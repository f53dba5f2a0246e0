// The dependencies a removal leaves behind (`npm run remove:job`, `npm run remove:capability`): the
// packages the removed files import that nothing left names, out of package.json, and the production
// ones only tests, the bench or scripts still name (or the apps only for its types), moved to
// devDependencies. package-lock.json follows through `npm install --package-lock-only --offline`:
// no download, and node_modules is left as it is (the next `npm ci` drops what is gone from it).
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { builtinModules, createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

const escape = (text) => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
const CODE = /\.(?:[cm]?[jt]s)$/;
/** Where the apps' code lives: a package named there is a production dependency. */
const PRODUCTION = /^(?:apps|libs)\//;

/** The package a bare module specifier names (`@scope/name/sub` → `@scope/name`), or undefined. */
function packageOf(specifier) {
  if (/^[./]|^node:|^@app\//.test(specifier) || builtinModules.includes(specifier.split('/')[0])) return undefined;
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

/** The packages a JavaScript or TypeScript source imports, exports from, requires or import()s. */
function importedPackages(text) {
  const found = new Set();
  for (const [, , specifier] of text.matchAll(/(?:\bfrom\s*|\bimport\s*\(?\s*|\brequire\s*\(\s*)(['"])([^'"\s]+)\1/g)) {
    const name = packageOf(specifier);
    if (name) found.add(name);
  }
  return found;
}

/** `@types/<name>` for `name` (`@types/scope__name` for `@scope/name`). */
const typesOf = (name) => `@types/${name.replace(/^@([^/]+)\//, '$1__')}`;

/**
 * The strings of a JavaScript or TypeScript source, read with the TypeScript parser (comments don't
 * count), each with whether it names a module for its types alone: `import type … from`, `export type
 * … from`, `import('…')` in a type. Those are gone from the compiled code, so they need the package
 * at build time only.
 */
function stringsOf(ts, file, text) {
  // why parent nodes set: typeOnly reads them.
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, /\.[cm]?js$/.test(file) ? ts.ScriptKind.JS : ts.ScriptKind.TS);
  const found = [];
  const typeOnly = (node) => {
    const parent = node.parent;
    if (ts.isImportDeclaration(parent)) return parent.moduleSpecifier === node && parent.importClause?.isTypeOnly === true;
    if (ts.isExportDeclaration(parent)) return parent.moduleSpecifier === node && parent.isTypeOnly;
    return ts.isLiteralTypeNode(parent) && ts.isImportTypeNode(parent.parent);
  };
  const visit = (node) => {
    if (ts.isStringLiteralLike(node)) found.push({ text: node.text, types: typeOnly(node) });
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/**
 * What removing the files `removed` does to package.json, given the files that stay (`remaining`,
 * package.json and the lock aside), `read(file)` and the project's root: `drop`, the packages they
 * import that no remaining file names (a string of its code, or a quoted word of a manifest or
 * config file), with their `@types/…`; and `toDev`, the production dependencies among them that only
 * files outside apps/ and libs/ still name, or files in them only for its types.
 */
export function dependencyChanges(root, removed, remaining, read) {
  const { dependencies = {}, devDependencies = {} } = JSON.parse(read('package.json'));
  const declared = (name) => name in dependencies || name in devDependencies;
  const candidates = new Set(removed.filter((file) => CODE.test(file)).flatMap((file) => [...importedPackages(read(file))]).filter(declared));
  const others = remaining.filter((file) => file !== 'package.json' && file !== 'package-lock.json');
  const ts = candidates.size > 0 ? createRequire(join(root, 'package.json'))('typescript') : undefined;
  const strings = new Map();
  const stringsIn = (file) => strings.get(file) ?? strings.set(file, stringsOf(ts, file, read(file))).get(file);
  // Each file that names `name`, and whether only for its types (see stringsOf).
  const usersOf = (name) => {
    const named = new RegExp(`(['"\`])${escape(name)}(?:/[^'"\`\\s]*)?\\1`);
    const naming = ({ text }) => text === name || text.startsWith(`${name}/`);
    return others.flatMap((file) => {
      if (!CODE.test(file)) return named.test(read(file)) ? [{ file, types: false }] : [];
      const uses = stringsIn(file).filter(naming);
      return uses.length === 0 ? [] : [{ file, types: uses.every((use) => use.types) }];
    });
  };
  const drop = [];
  const toDev = [];
  for (const name of [...candidates].sort()) {
    const users = usersOf(name);
    if (users.length === 0) {
      drop.push(name);
      if (typesOf(name) in devDependencies && usersOf(typesOf(name)).length === 0) drop.push(typesOf(name));
    } else if (name in dependencies && !users.some(({ file, types }) => PRODUCTION.test(file) && !types)) {
      toDev.push({ name, users: users.map(({ file, types }) => (types ? `${file} (its types)` : file)) });
    }
  }
  return { drop, toDev };
}

/** Lines for a removal's plan saying what `changes` does to package.json. */
export function describeDependencyChanges({ drop, toDev }) {
  return [
    ...drop.map((name) => `  removed ${name} from package.json: nothing left uses it`),
    ...toDev.map(({ name, users }) => `  moved   ${name} to devDependencies: only ${users.slice(0, 3).join(', ')}${users.length > 3 ? ', …' : ''} still ${users.length === 1 ? 'uses' : 'use'} it`),
  ];
}

/**
 * Writes `changes` into package.json, then brings package-lock.json in line with npm (offline, the
 * lock only). Returns undefined, or what went wrong and the command that finishes the job.
 */
export function applyDependencyChanges(root, { drop, toDev }) {
  if (drop.length === 0 && toDev.length === 0) return undefined;
  const file = join(root, 'package.json');
  const pkg = JSON.parse(readFileSync(file, 'utf8'));
  for (const { name } of toDev) {
    pkg.devDependencies = { ...pkg.devDependencies, [name]: pkg.dependencies[name] };
    delete pkg.dependencies[name];
  }
  for (const name of drop) {
    delete pkg.dependencies?.[name];
    delete pkg.devDependencies?.[name];
  }
  // why sorted: as npm writes them, so its next install changes no line here.
  if (pkg.devDependencies) pkg.devDependencies = Object.fromEntries(Object.entries(pkg.devDependencies).sort(([a], [b]) => a.localeCompare(b, 'en')));
  writeFileSync(file, `${JSON.stringify(pkg, null, 2)}\n`);
  const problem = lockFor(root, pkg);
  return problem && `package.json is updated, but npm could not update package-lock.json offline (${problem}); run \`npm install\` to update it`;
}

/**
 * package-lock.json for `pkg`, computed by npm in a directory of its own: package.json, the lock and
 * the `file:` packages it names, no node_modules. why there: in the project, npm also rewrites
 * node_modules/.package-lock.json, npm's record of what is installed, which the removal did not change.
 */
function lockFor(root, pkg) {
  const dir = mkdtempSync(join(tmpdir(), 'package-deps-'));
  try {
    cpSync(join(root, 'package.json'), join(dir, 'package.json'));
    cpSync(join(root, 'package-lock.json'), join(dir, 'package-lock.json'));
    for (const spec of Object.values({ ...pkg.dependencies, ...pkg.devDependencies })) {
      if (!spec.startsWith('file:')) continue;
      mkdirSync(dirname(join(dir, spec.slice(5))), { recursive: true });
      symlinkSync(join(root, spec.slice(5)), join(dir, spec.slice(5)));
    }
    // why npm_execpath: under `npm run` it is the npm that runs this script, whatever `npm` on PATH is.
    const [command, first] = process.env.npm_execpath ? [process.execPath, [process.env.npm_execpath]] : ['npm', []];
    const args = ['install', '--package-lock-only', '--offline', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error'];
    const result = spawnSync(command, [...first, ...args], { cwd: dir, encoding: 'utf8', env: { ...process.env, npm_config_update_notifier: 'false' } });
    if (result.status !== 0) return (result.error?.message ?? result.stderr).trim().split('\n').slice(-3).join(' ');
    cpSync(join(dir, 'package-lock.json'), join(root, 'package-lock.json'));
    return undefined;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
