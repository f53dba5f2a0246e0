#!/usr/bin/env node
// `npm start`: runs the built API and worker against a Redis, for trying the template locally.
// Uses REDIS_URL (default redis://127.0.0.1:6379) when it answers; otherwise starts `redis-server`
// from PATH on a free port for this session. Ctrl-C stops everything it started.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import IORedis from 'ioredis';

const root = join(import.meta.dirname ?? new URL('.', import.meta.url).pathname, '..');
const children = new Set();

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
  children.add(redis);
  redis.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  const started = `redis://127.0.0.1:${port}`;
  for (let i = 0; i < 100 && !(await reachable(started)); i++) await new Promise((r) => setTimeout(r, 100));
  console.log(`[start] no Redis at ${url}: started redis-server on ${started} for this session (data is not kept)`);
  return started;
}

function run(name, entry, env) {
  const child = spawn(process.execPath, [join(root, entry)], { cwd: root, env, stdio: 'inherit' });
  children.add(child);
  child.on('exit', (code, signal) => {
    children.delete(child);
    if (!stopping) {
      console.error(`[start] ${name} exited (${signal ?? code}); stopping the rest`);
      stop(code || 1);
    }
  });
}

let stopping = false;
function stop(code = 0) {
  if (stopping) return;
  stopping = true;
  for (const child of children) child.kill('SIGTERM');
  const wait = setInterval(() => {
    if ([...children].every((c) => c.exitCode !== null || c.signalCode !== null)) {
      clearInterval(wait);
      process.exit(code);
    }
  }, 100);
}
process.on('SIGINT', () => stop(0));
process.on('SIGTERM', () => stop(0));

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
