#!/usr/bin/env node
/**
 * package.json's `postinstall`: points node_modules/.bin/node at the Node package npm installed for
 * this machine (one of package.json's optionalDependencies here).
 *
 * why: npm 10 links it, then deletes it again. The packages of the other platforms fail to install
 * (as optional dependencies should) and npm 10 removes what each would have installed, its bin
 * `node_modules/.bin/node` included, which is the same path as the one it kept. npm 11 skips those
 * packages up front. Runs on the Node that runs npm (20 or later), so it uses nothing newer.
 */
import { existsSync, lstatSync, mkdirSync, readFileSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');
const modules = join(root, 'node_modules');
const readJson = (file) => JSON.parse(readFileSync(file, 'utf8'));

const names = Object.keys(readJson(join(here, 'package.json')).optionalDependencies);
const installed = names.filter((name) => existsSync(join(modules, name, 'package.json')));
// why silent: an install without dev dependencies (the image's) has no Node package to link.
if (installed.length === 0 && !existsSync(join(modules, 'node-runtime'))) process.exit(0);
if (installed.length !== 1) {
  console.error(
    `scripts/node-runtime: expected npm to install one of ${names.join(', ')} for ${process.platform}-${process.arch}; ` +
      `found ${installed.length ? installed.join(', ') : 'none'}. node_modules/.bin/node is left as it is.`,
  );
  process.exit(1);
}
const binary = join(modules, installed[0], readJson(join(modules, installed[0], 'package.json')).bin.node);
const bin = join(modules, '.bin');
mkdirSync(bin, { recursive: true });
if (process.platform === 'win32') {
  writeFileSync(join(bin, 'node.cmd'), `@"%~dp0\\${relative(bin, binary)}" %*\r\n`);
} else {
  const link = join(bin, 'node');
  const target = relative(bin, binary);
  const current = lstatSync(link, { throwIfNoEntry: false });
  if (current?.isSymbolicLink() && readlinkSync(link) === target) process.exit(0);
  if (current) rmSync(link);
  symlinkSync(target, link);
}
