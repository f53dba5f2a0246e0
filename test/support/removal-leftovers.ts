import { basename } from 'node:path';
import type { RepoCopy } from './repo-copy';

const CODE = /\.[cm]?[jt]s$/;
const TEXT = /\.(?:[cm]?[jt]s|json|ya?ml|md|sh|conf|env|toml)$|(?:^|\/)Dockerfile$/;
const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

/** The packages a source imports, exports from, requires or import()s (bare specifiers, by package). */
function importedPackages(text: string): Set<string> {
  const names = new Set<string>();
  for (const [, , specifier] of text.matchAll(/(?:\bfrom\s*|\bimport\s*\(?\s*|\brequire\s*\(\s*)(['"])([^'"\s]+)\1/g)) {
    if (/^[./]|^node:|^@app\//.test(specifier)) continue;
    const parts = specifier.split('/');
    names.add(specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]);
  }
  return names;
}

/**
 * What a removal left pointing at what it deleted, in a `project` copy (deleted: in git's index,
 * gone from the tree): lines of README.md and docs/ that cite a deleted file or folder; packages in package.json
 * that only deleted files imported; production dependencies that apps/ and libs/ no longer name;
 * a package-lock.json whose root entry is not package.json's. Each as a line; none is [].
 */
export function removalLeftovers(copy: RepoCopy): string[] {
  const deleted = copy.exec('git', ['ls-files', '--deleted']).stdout.split('\n').filter(Boolean);
  const kept = copy.files();
  const texts = new Map(kept.filter((file) => TEXT.test(file) && file !== 'package-lock.json').map((file) => [file, copy.read(file)]));
  const leftovers: string[] = [];

  // A deleted file's name alone counts only where no kept file has that name; a folder gone with its files counts by its path.
  const keptNames = new Set(kept.map((file) => basename(file)));
  const folders = (file: string) => file.split('/').slice(0, -1).map((_, i, parts) => parts.slice(0, i + 1).join('/'));
  const goneFolders = [...new Set(deleted.flatMap(folders))].filter((dir) => !copy.exists(dir));
  for (const file of [...deleted, ...goneFolders]) {
    const byName = deleted.includes(file) && !keptNames.has(basename(file));
    const spellings = [file, ...(byName ? [basename(file)] : [])].map(escape).join('|');
    const cites = new RegExp(`(?:^|[\\s\`'"(/[])(?:${spellings})(?=[\`'")\\]\\s#:,.;/]|$)`);
    for (const [doc, text] of texts) {
      if (doc !== 'README.md' && !doc.startsWith('docs/')) continue;
      text.split('\n').forEach((line, i) => cites.test(line) && leftovers.push(`${doc}:${i + 1} cites ${file}, which is gone`));
    }
  }

  const pkg = JSON.parse(copy.read('package.json')) as { dependencies?: Record<string, string>; devDependencies?: Record<string, string> };
  const declared = { ...pkg.dependencies, ...pkg.devDependencies };
  const namers = (name: string) => {
    const quoted = new RegExp(`(['"\`])${escape(name)}(?:/[^'"\`\\s]*)?\\1`);
    return [...texts].filter(([file, text]) => file !== 'package.json' && quoted.test(text)).map(([file]) => file);
  };
  const imported = new Set(deleted.filter((file) => CODE.test(file)).flatMap((file) => [...importedPackages(copy.exec('git', ['show', `:${file}`]).stdout)]));
  for (const name of [...imported].filter((n) => n in declared)) {
    const users = namers(name);
    if (users.length === 0) leftovers.push(`package.json: ${name}, which only deleted files used`);
    else if (name in (pkg.dependencies ?? {}) && !users.some((file) => /^(?:apps|libs)\//.test(file))) {
      leftovers.push(`package.json: ${name} is a production dependency that only ${users.join(', ')} use`);
    }
  }
  const lock = (JSON.parse(copy.read('package-lock.json')) as { packages: Record<string, typeof pkg> }).packages[''];
  for (const field of ['dependencies', 'devDependencies'] as const) {
    const sorted = (deps: Record<string, string> = {}) => JSON.stringify(Object.entries(deps).sort(([a], [b]) => (a < b ? -1 : 1)));
    if (sorted(lock[field]) !== sorted(pkg[field])) leftovers.push(`package-lock.json: its ${field} are not package.json's`);
  }
  return leftovers;
}
