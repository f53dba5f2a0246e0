import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RedisServer, redisReachable } from './redis';
import { newRunId, RUN_VAR } from './test-run';

/**
 * End-to-end tests need a real Redis: REDIS_URL (default redis://127.0.0.1:6379) when it answers,
 * otherwise a redis-server started here for the run. Tests isolate themselves with their own key
 * prefix. The run gets an id and a temp dir of its own (TMPDIR for every test and everything it
 * starts), which the global teardown checks: see global-teardown.ts.
 */
export default async function globalSetup(): Promise<void> {
  const id = newRunId();
  const dir = mkdtempSync(join(tmpdir(), `nest-offload-test-${id}-`));
  mkdirSync(join(dir, 'tmp'));
  (globalThis as { __run?: { dir: string; tmp: string; outer: string } }).__run = { dir, tmp: join(dir, 'tmp'), outer: tmpdir() };
  process.env[RUN_VAR] = id;
  process.env.TMPDIR = join(dir, 'tmp');
  // why: every app a suite starts loads ~1,100 modules; V8's code cache, shared by all the processes
  // of the run, saves about a fifth of an app's start-up CPU (scripts/test.mjs gives both lanes one).
  process.env.NODE_COMPILE_CACHE ??= join(dir, 'tmp', 'node-compile-cache');

  const url = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
  if (await redisReachable(url)) {
    process.env.E2E_REDIS_URL = url;
    return;
  }
  const server = await RedisServer.start();
  (globalThis as { __redis?: RedisServer }).__redis = server;
  process.env.E2E_REDIS_URL = server.url;
  console.log(`\nno Redis at ${url}; started redis-server at ${server.url} for the tests`);
}
