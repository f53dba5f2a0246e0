import { readdirSync, readFileSync, rmSync } from 'node:fs';
import IORedis from 'ioredis';
import type { RedisServer } from './redis';
import { RUN_VAR, runPrefix } from './test-run';

type Run = { dir: string; tmp: string; outer: string };

const TOOL_CACHES = /^(node-compile-cache|jest_\w+)$/;
// The default file blob store of apps started without BLOB_STORE_URL (libs/config/src/blob-target.ts):
// like the run's keys in the shared Redis, data under the run's prefixes, deleted with the run's dir.
const RUN_DATA = /^nest-offload-blobs$/;

/**
 * Every suite starts and stops exactly what it uses. This checks it, once all suites have run, and
 * fails the run naming what one of them left behind: a process carrying this run's marker (an app,
 * a redis-server or Sentinel, a browser, a nested build), or a file in the run's temp dir. What it
 * finds is then killed or removed, so one leak does not spill into the next run. Keys under the
 * run's prefix in the shared Redis are deleted (suites share it, each under a prefix of its own), and
 * so is the default blob store's directory, the same data on disk.
 */
export default async function globalTeardown(): Promise<void> {
  const run = (globalThis as { __run?: Run }).__run;
  await (globalThis as { __redis?: RedisServer }).__redis?.stop();
  const id = process.env[RUN_VAR];
  const problems: string[] = [];
  if (id) {
    for (const proc of markedProcesses(id)) {
      problems.push(`process ${proc.pid} still running: ${proc.cmdline}`);
      try {
        process.kill(proc.pid, 'SIGKILL');
      } catch {
        // gone meanwhile
      }
    }
  }
  if (run) {
    // why not these: caches tools keep in TMPDIR by design (tsc's and npm's compile cache, Jest's own), not a suite's leftovers.
    const left = readdirSync(run.tmp).filter((entry) => !TOOL_CACHES.test(entry) && !RUN_DATA.test(entry));
    for (const entry of left) problems.push(`temp dir entry left behind: ${run.tmp}/${entry}`);
    rmSync(run.dir, { recursive: true, force: true });
    process.env.TMPDIR = run.outer;
  }
  await deleteRunKeys(process.env.E2E_REDIS_URL);
  if (problems.length > 0) {
    throw new Error(`A suite left things behind (each suite must stop what it starts, even when it fails):\n  ${problems.join('\n  ')}`);
  }
}

/** Processes whose environment carries this run's marker, except Jest's own workers. */
function markedProcesses(id: string): Array<{ pid: number; cmdline: string }> {
  const found: Array<{ pid: number; cmdline: string }> = [];
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      const environ = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
      if (!environ.includes(`${RUN_VAR}=${id}`)) continue;
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
      if (/jest-worker|processChild\.js/.test(cmdline) || cmdline === '') continue;
      found.push({ pid, cmdline: cmdline.slice(0, 200) });
    } catch {
      // not ours to read, or exited meanwhile
    }
  }
  return found;
}

async function deleteRunKeys(url: string | undefined): Promise<void> {
  if (!url) return;
  const redis = new IORedis(url, { lazyConnect: true, connectTimeout: 2000, maxRetriesPerRequest: 1, retryStrategy: () => null });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${runPrefix()}-*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) await redis.unlink(...keys);
    } while (cursor !== '0');
  } catch {
    // the shared Redis went away: nothing to clean
  } finally {
    redis.disconnect();
  }
}
