#!/usr/bin/env node
// `npm run rename -- <service-name>`: makes this template your service. Replaces the current name
// (package.json's "name") in every spelling (kebab-case, snake_case, SCREAMING_SNAKE, camelCase,
// PascalCase) in every file git knows (tracked, or new and not ignored): package name, default
// Redis prefix, metric prefix, connection and log names, image names, Kubernetes names and labels,
// README title. It checks the new name and every file before it writes one. In README.md it also
// drops the "Name it" section (done) and marks the headline figure as the template's, not the service's.
import { spawnSync } from 'node:child_process';
import { lstatSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join } from 'node:path';

const root = join(import.meta.dirname ?? new URL('.', import.meta.url).pathname, '..');

function fail(message) {
  console.error(`rename: ${message}`);
  process.exit(1);
}

// Lowercase words of letters and digits, each starting with a letter, joined by single dashes: a valid
// npm name, Kubernetes DNS-1123 (and DNS-1035) label, Redis key prefix and, with underscores,
// Prometheus metric prefix; words that start with a letter keep camelCase and PascalCase spellings
// unambiguous. why 56: the longest name derived from it, `<name>-worker`, stays a 63-character label.
const NAME = /^[a-z][a-z0-9]*(?:-[a-z][a-z0-9]*)*$/;
const MAX_LENGTH = 56;

function problemWith(name) {
  if (!NAME.test(name)) {
    return 'use lowercase words of letters and digits, each starting with a letter, joined by single dashes';
  }
  if (name.length > MAX_LENGTH) return `use at most ${MAX_LENGTH} characters, so that "<name>-worker" is still a 63-character Kubernetes name`;
  if (builtinModules.includes(name)) return `"${name}" is a Node.js core module name, which npm refuses as a package name`;
  return undefined;
}

/**
 * Matches `name` in any spelling: its words in any case, joined by a dash, an underscore or nothing.
 * why not a space: a name such as "est-off" would also match inside "the best offer".
 */
const spellings = (name) =>
  new RegExp(
    name
      .split('-')
      .map((word) => word.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
      .join('[-_]?'),
    'gi',
  );

/** `to` spelled the way `found` (one spelling of `from`) is: from-name's FromName gives ToName, FROM_NAME gives TO_NAME. */
function respell(found, from, to) {
  const fromWords = from.split('-');
  const parts = [];
  let separator = '';
  let at = 0;
  for (const [i, word] of fromWords.entries()) {
    parts.push(found.slice(at, at + word.length));
    at += word.length;
    if (i < fromWords.length - 1 && /[-_]/.test(found[at] ?? '')) separator = found[at++];
  }
  const caseOf = (part) => (/[A-Z]/.test(part) && part === part.toUpperCase() ? 'upper' : /^[A-Z]/.test(part) ? 'capital' : 'lower');
  const cases = parts.map(caseOf);
  return to
    .split('-')
    .map((word, i) => {
      const style = cases[Math.min(i, cases.length - 1)];
      return style === 'upper' ? word.toUpperCase() : style === 'capital' ? word[0].toUpperCase() + word.slice(1) : word;
    })
    .join(separator);
}

/** The project's files as git sees them: tracked, plus new files not ignored. */
function projectFiles() {
  const git = spawnSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: root, encoding: 'utf8' });
  if (git.error || git.status !== 0) {
    fail(`needs git to know which files are the project's (${git.error?.message ?? git.stderr.trim()}); run \`git init && git add -A\` first`);
  }
  const files = [];
  for (const path of new Set(git.stdout.split('\0').filter(Boolean))) {
    const stat = lstatSync(join(root, path), { throwIfNoEntry: false });
    if (!stat?.isFile()) continue; // deleted, a symlink or a submodule
    const content = readFileSync(join(root, path));
    // why: like git, a NUL byte in the first 8000 bytes means binary; those are left alone.
    if (content.subarray(0, 8000).includes(0)) continue;
    files.push({ path, text: content.toString('utf8') });
  }
  return files;
}

/**
 * The README of a service that is no longer the template: without the section that tells how to
 * rename it (its "every spelling of <name>" would now be the service's own name), and with the
 * benchmark headline said to be the template's (the service has not measured itself). Each edit
 * applies only where the template's text is still there, so a second rename changes nothing more.
 */
function readmeOfService(text) {
  const edits = [];
  const named = text.replace(/^### Name it\n[\s\S]*?(?=^#{1,3} )/m, () => {
    edits.push('dropped its "Name it" section');
    return '';
  });
  const headline = named.replace(/^\*\*The headline figure\*\* \(/m, () => {
    edits.push('marked the headline figure as the template\'s');
    return '**The headline figure of the template this service started from** (';
  });
  return { text: headline, edits };
}

function main() {
  const args = process.argv.slice(2);
  if (args.length !== 1 || args[0].startsWith('-')) fail('usage: npm run rename -- <service-name>');
  const [to] = args;
  const from = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).name;
  const problem = problemWith(to);
  if (problem) fail(`"${to}" cannot name the service: ${problem}`);
  if (problemWith(from)) fail(`package.json's name "${from}" is not one this script can rename from; rename by hand`);
  if (to === from) fail(`the service is already named "${from}"; nothing to do`);
  if (!from.includes('-') && to.includes('-')) {
    // why: a lone lowercase "solo" may be kebab-case (`solo-api`) or an identifier (`const solo`); only the first may get a dash.
    fail(`from the one-word name "${from}", a name of several words cannot be spelled right everywhere; choose one word, or rename by hand`);
  }

  const files = projectFiles();
  // why refuse a name the project already contains: a later rename could not tell the name from those
  // words, and a name such as "jobs" would sit beside the same word meaning something else (`jobs-api`, `/v1/jobs`).
  const fromPattern = spellings(from);
  const toPattern = new RegExp(spellings(to).source, 'i');
  const taken = files.flatMap(({ path, text }) =>
    text
      .replace(fromPattern, ' ') // these become the new name anyway
      .split('\n')
      .flatMap((line, i) => (toPattern.test(line) ? [`${path}:${i + 1}: ${line.trim().slice(0, 100)}`] : [])),
  );
  if (taken.length > 0) {
    fail(`"${to}" already appears in the project (${taken.length} line${taken.length === 1 ? '' : 's'}, e.g. ${taken.slice(0, 3).join(' | ')}); pick a more distinctive name`);
  }

  const changes = new Map(); // old spelling → [new spelling, count]
  const written = []; // paths as they are now
  const readmeEdits = [];
  for (const { path, text } of files) {
    let count = 0;
    const service = path === 'README.md' ? readmeOfService(text) : { text, edits: [] };
    readmeEdits.push(...service.edits);
    const renamed = service.text.replace(fromPattern, (found) => {
      const spelled = respell(found, from, to);
      const [, n] = changes.get(found) ?? [spelled, 0];
      changes.set(found, [spelled, n + 1]);
      count++;
      return spelled;
    });
    const newPath = path.replace(fromPattern, (found) => respell(found, from, to));
    if (count === 0 && newPath === path && service.edits.length === 0) continue;
    if (newPath !== path) {
      mkdirSync(dirname(join(root, newPath)), { recursive: true });
      renameSync(join(root, path), join(root, newPath));
    }
    writeFileSync(join(root, newPath), renamed);
    if (newPath !== path) console.log(`rename: moved ${path} → ${newPath}`);
    written.push(newPath);
  }
  const byFolder = new Map();
  for (const path of written) {
    const folder = path.includes('/') ? `${path.split('/')[0]}/` : path;
    byFolder.set(folder, (byFolder.get(folder) ?? 0) + 1);
  }

  const places = [...changes.values()].reduce((sum, [, n]) => sum + n, 0);
  console.log(
    [
      `rename: ${from} → ${to}: ${places} places in ${written.length} files.`,
      `  ${[...changes].map(([old, [spelled, n]]) => `${old} → ${spelled} (${n})`).join(', ')}`,
      `  ${[...byFolder].map(([folder, n]) => (folder.endsWith('/') ? `${folder} (${n})` : folder)).join(', ')}`,
      ...(readmeEdits.length ? [`  README.md: ${readmeEdits.join('; ')}`] : []),
      '',
      'Next:',
      '  git diff                    review it',
      '  npm test                    build and test under the new name',
      `  git add -A && git commit -m "Rename to ${to}"`,
      'Outside this repository nothing changed: Redis keys under the old prefix (set REDIS_PREFIX to it to keep serving',
      'jobs queued there), images already built, Kubernetes objects already applied.',
    ].join('\n'),
  );
}

main();
