// Small helpers of `npm run test:image`: commands, waiting, failing, and undoing what a run started.
import { spawnSync } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';

export const ROOT = join(import.meta.dirname, '..', '..');

export const log = (msg) => console.log(`[image] ${msg}`);
export const seconds = (ms) => `${(ms / 1000).toFixed(1)} s`;

/** A check that did not hold: its message is the whole report (no stack). */
export class Failure extends Error {}
export const fail = (msg) => {
  throw new Failure(msg);
};

const undo = [];
let undone = false;
/** Registers what stops or removes something this run started; `cleanUp` runs them newest first. */
export const onCleanUp = (fn) => undo.push(fn);
export function cleanUp() {
  if (undone) return;
  undone = true;
  for (const fn of undo.reverse()) {
    try {
      fn();
    } catch (error) {
      console.error(`[image] clean-up: ${error.message}`);
    }
  }
}

/** Runs a command to its end; fails with its output unless `allowFail`. `quiet` captures the output instead of showing it. */
export function sh(cmd, args, { quiet = false, allowFail = false, env = process.env, timeoutMs = 30 * 60_000 } = {}) {
  const result = spawnSync(cmd, args, {
    cwd: ROOT,
    env,
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
    timeout: timeoutMs,
    stdio: ['ignore', quiet ? 'pipe' : 'inherit', quiet ? 'pipe' : 'inherit'],
  });
  if (result.error) fail(`${cmd} ${args.join(' ')}: ${result.error.message}`);
  if (result.status !== 0 && !allowFail) {
    fail(`${cmd} ${args.slice(0, 3).join(' ')}… exited ${result.status}${quiet ? `\n${(result.stderr || result.stdout).trim()}` : ''}`);
  }
  return result;
}
export const out = (cmd, args, options) => sh(cmd, args, { ...options, quiet: true }).stdout.trim();
export const has = (cmd) => spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `check` until it returns something truthy; a Failure thrown by it ends the wait at once. */
export async function waitFor(what, check, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      const value = await check();
      if (value) return value;
    } catch (error) {
      if (error instanceof Failure) throw error;
      last = error;
    }
    if (Date.now() > deadline) fail(`timed out after ${seconds(timeoutMs)} waiting for ${what}${last ? ` (${last.message})` : ''}`);
    await sleep(200);
  }
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer().on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** GET or POST JSON with a generous timeout; `json` is the parsed body when it is JSON. */
export async function http(url, { method = 'GET', body, headers = {} } = {}) {
  const res = await fetch(url, {
    method,
    headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(120_000),
  });
  const text = await res.text();
  let json;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, text, json };
}
