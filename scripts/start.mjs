#!/usr/bin/env node
// `npm start`: builds, then runs the API and worker against a Redis, for trying the template locally
// (`npm start -- --no-build` runs what dist/ holds). Uses REDIS_URL (default redis://127.0.0.1:6379)
// when it answers; otherwise starts `redis-server` from PATH on a free port for this session.
// Ctrl-C stops everything it started, and so do SIGTERM, SIGINT or SIGHUP to npm's pid or its own.
import './node-runtime/check.mjs';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import IORedis from 'ioredis';

const root = join(import.meta.dirname ?? new URL('.', import.meta.url).pathname, '..');
const children = new Set();
/** How each child ended, for the line printed when everything has stopped. */
const ended = new Map();

async function reachable(url) {
  const client = new IORedis(url, { lazyConnect: true, connectTimeout: 1000, maxRetriesPerRequest: 0, retryStrategy: () => null });
  client.on('error', () => {});
  try {
    await client.connect();
    return (await client.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer().on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

async function localRedis() {
  const url = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
  if (await reachable(url)) {
    console.log(`[start] using Redis at ${url.replace(/\/\/[^@]*@/, '//***@')}`);
    return url;
  }
  if (spawnSync('redis-server', ['--version']).error) {
    console.error(
      `[start] No Redis answers at ${url}, and redis-server is not on PATH.\n` +
        '        Either point REDIS_URL at a Redis 6.2+ (REDIS_URL=redis://host:6379 npm start),\n' +
        '        or install one: `apt install redis-server`, `brew install redis`,\n' +
        '        or `docker run -d -p 6379:6379 redis:7`; then run `npm start` again.',
    );
    process.exit(1);
  }
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'nest-offload-redis-'));
  const redis = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], {
    stdio: 'ignore',
  });
  track('redis-server', redis);
  redis.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  const started = `redis://127.0.0.1:${port}`;
  for (let i = 0; i < 100 && !(await reachable(started)); i++) await new Promise((r) => setTimeout(r, 100));
  console.log(`[start] no Redis at ${url}: started redis-server on ${started} for this session (data is not kept)`);
  return started;
}

function track(name, child) {
  children.add(child);
  child.on('exit', (code, signal) => {
    children.delete(child);
    ended.set(name, signal ?? `exit ${code}`);
    if (stopping && children.size === 0) {
      console.log(`[start] stopped: ${[...ended].map(([n, how]) => `${n} (${how})`).join(', ')}`);
      process.exit(stopping.code);
    }
  });
  return child;
}

/** The Node flags the image starts `entry` with (docker/Dockerfile's CMD for it): npm start runs the apps as deployed. */
function imageFlags(entry) {
  const cmd = readFileSync(join(root, 'docker', 'Dockerfile'), 'utf8')
    .split('\n')
    .filter((line) => line.startsWith('CMD [') && line.includes(`"${entry}"`))
    .map((line) => JSON.parse(line.slice(4)))[0];
  return cmd ? cmd.slice(1, -1) : [];
}

function run(name, entry, env) {
  const child = track(name, spawn(process.execPath, [...imageFlags(entry), join(root, entry)], { cwd: root, env, stdio: 'inherit' }));
  child.on('exit', (code, signal) => {
    if (!stopping) {
      console.error(`[start] ${name} exited (${signal ?? code}); stopping the rest`);
      stop(code || 1);
    }
  });
}

/** @type {{ code: number } | undefined} */
let stopping;
/** @type {import('node:child_process').ChildProcess | undefined} */
let building;
function stop(code = 0) {
  if (stopping) return;
  stopping = { code };
  if (building) {
    if (process.platform === 'win32') building.kill('SIGTERM');
    else process.kill(-building.pid, 'SIGTERM');
    return;
  }
  if (children.size === 0) process.exit(code);
  for (const child of children) child.kill('SIGTERM');
}
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => stop(0));

// why watch the parent: `kill <npm's pid>` (a process manager, an IDE's stop button, `timeout`)
// reaches npm alone, which passes SIGTERM and SIGINT on to this script (package.json `exec`s it, so no
// shell stands between to swallow them) but dies of SIGHUP without a word: then the parent changes.
const parent = process.ppid;
setInterval(() => process.ppid !== parent && stop(0), 250).unref();

if (!process.argv.includes('--no-build')) {
  // why through npm when there is one: `npm run build` stays the one definition of the build.
  const npm = process.env.npm_execpath;
  const args = npm?.endsWith('.js') ? [npm, 'run', 'build'] : [join(root, 'node_modules/@nestjs/cli/bin/nest.js'), 'build'];
  // why a process group of its own: a stop passed to npm would reach its shell only, and the compiler would run on.
  building = spawn(process.execPath, args, { cwd: root, stdio: 'inherit', detached: process.platform !== 'win32' });
  const code = await new Promise((resolve) => building.on('exit', (c, signal) => resolve(signal ? 1 : c)));
  building = undefined;
  if (stopping || code !== 0) process.exit(stopping ? stopping.code : code);
}

// A Sentinel set or Cluster named in the environment is used as it is (the apps check it at start-up).
const env = process.env.REDIS_SENTINELS || process.env.REDIS_CLUSTER_NODES ? { ...process.env } : { ...process.env, REDIS_URL: await localRedis() };
run('api', 'dist/apps/api/src/main.js', env);
run('worker', 'dist/apps/worker/src/main.js', env);
const port = env.PORT || 3000;
console.log(
  `[start] API on http://localhost:${port}, worker probes on http://localhost:${env.WORKER_PORT || 3001}. Try:\n` +
    `        curl -s -XPOST localhost:${port}/v1/jobs/fibonacci -H 'content-type: application/json' -H 'prefer: wait=10' -d '{"n":35}'\n` +
    '        Ctrl-C stops everything.',
);
