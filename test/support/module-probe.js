'use strict';
/**
 * Preloaded into an app with `--require` (NODE_OPTIONS), which Node also runs in every worker
 * thread: records, as JSON lines appended to MODULE_PROBE_FILE, each thread it starts in and every
 * file of the packages named in MODULE_PROBE_PACKAGES (comma-separated) that the thread resolves or
 * still holds in its module cache when the process exits. Not part of the apps.
 */
const { appendFileSync } = require('node:fs');
const Module = require('node:module');
const { sep } = require('node:path');
const { isMainThread, threadId } = require('node:worker_threads');

const file = process.env.MODULE_PROBE_FILE;
const dirs = (process.env.MODULE_PROBE_PACKAGES || '').split(',').filter(Boolean).map((name) => `${sep}node_modules${sep}${name}${sep}`);
const thread = isMainThread ? 'main' : `thread-${threadId}`;
const record = (entry) => appendFileSync(file, `${JSON.stringify({ pid: process.pid, thread, ...entry })}\n`);
const watched = (path) => typeof path === 'string' && dirs.some((dir) => path.includes(dir));

record({ event: 'start' });

const resolve = Module._resolveFilename;
Module._resolveFilename = function (...args) {
  const path = resolve.apply(this, args);
  if (watched(path)) record({ event: 'resolved', path });
  return path;
};

process.on('exit', () => {
  const held = Object.keys(require.cache).filter(watched);
  record({ event: 'exit', held });
});
