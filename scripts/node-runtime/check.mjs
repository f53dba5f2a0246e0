#!/usr/bin/env node
/**
 * First step of every npm script that runs the apps, the tests or the bench (and imported first by
 * scripts/start.mjs, which `npm start` runs alone): stops with the fix when
 * the `node` on PATH is not the Node `npm ci` installs (node_modules/.bin/node, which npm puts
 * first on PATH), instead of letting them run quietly on whatever Node runs npm. Runs on that other
 * Node too (20 or later), so it uses nothing newer.
 */
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');
const [pinned] = new Set(Object.values(JSON.parse(readFileSync(join(here, 'package.json'), 'utf8')).optionalDependencies));
if (process.versions.node !== pinned) {
  const script = process.env.npm_lifecycle_event ? `npm run ${process.env.npm_lifecycle_event}` : 'This';
  const bin = join(root, 'node_modules', '.bin', process.platform === 'win32' ? 'node.cmd' : 'node');
  const fix = !existsSync(join(root, 'node_modules', 'node-runtime'))
    ? 'Run `npm ci` first: it installs that Node with the other dependencies.'
    : !existsSync(bin)
      ? 'node_modules/.bin/node is missing (an install with --ignore-scripts, or `npm install <package>` with npm 10): run `npm run postinstall` to link it, or `npm ci`.'
      : process.platform !== 'win32' && realpathSync(bin) !== realpathSync(process.execPath)
        ? 'Run it through npm (`npm run …`, `npx …`), which puts node_modules/.bin first on PATH.'
        : 'node_modules is from another lock file: run `npm ci`.';
  console.error(`${script} runs on Node ${pinned}, the one \`npm ci\` installs into node_modules/.bin, not on Node ${process.versions.node} (${process.execPath}).\n${fix}`);
  process.exit(1);
}
