import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import IORedis from 'ioredis';
import { AppProcess } from '../../test/support/apps';
import { RedisServer, redisReachable } from '../../test/support/redis';
import { freePort } from '../../test/support/wait';
import { BENCH_API_KEY, sendKeyTo } from '../load/api-key';

export type Env = Record<string, string | undefined>;

/**
 * Starts a Node script as a child process on a free port (passed as `portVar`) and waits until its
 * /health/ready answers. The test helpers' AppProcess tracks it: logs, pid, metrics, stop, and a kill
 * on exit should the bench die half-way.
 */
export async function startNode(
  script: string,
  env: Env,
  options: { cwd: string; portVar?: string; kind?: 'api' | 'worker'; port?: number; nodeArgs?: string[] },
): Promise<AppProcess> {
  const port = options.port ?? (await freePort());
  const proc = spawn(process.execPath, [...(options.nodeArgs ?? []), script], {
    cwd: options.cwd,
    // why these two when they are set (the bench smoke of `npm test`): the run's compile cache (start-up
    // CPU, both sides alike), and its marker, so the run's teardown finds an app a killed bench left.
    env: {
      PATH: process.env.PATH,
      NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE,
      NEST_OFFLOAD_TEST_RUN: process.env.NEST_OFFLOAD_TEST_RUN,
      HOST: '127.0.0.1',
      ...env,
      [options.portVar ?? 'PORT']: String(port),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const app = new AppProcess(options.kind ?? 'api', port, proc);
  try {
    await app.ready(60_000);
  } catch (error) {
    app.signal('SIGKILL');
    throw new Error(`${script} did not start: ${String(error)}\n${app.stderr.join('').slice(-2000)}`);
  }
  return app;
}

/** What the image sets beyond the apps' defaults (docker/Dockerfile): the bench measures the template as deployed. */
export const IMAGE_ENV: Env = { WORKER_SCHED: 'idle' };

/** The Node flags docker/Dockerfile's CMD starts an app's entry point with (the API's V8 heap flags), as the bench starts it. */
export function imageNodeFlags(kind: 'api' | 'worker'): string[] {
  const entry = `dist/apps/${kind}/src/main.js`;
  const line = readFileSync(join(__dirname, '..', '..', '..', '..', 'docker', 'Dockerfile'), 'utf8')
    .split('\n')
    .find((l) => l.startsWith('CMD [') && l.includes(`"${entry}"`));
  return line ? (JSON.parse(line.slice(4)) as string[]).slice(1, -1) : [];
}

/**
 * One of the template's apps from the build in `dist`, with the bench's job types added to its
 * registry (bench-jobs.preload.ts, which Node also runs in each pool thread), and a full garbage
 * collection on SIGUSR2 (--expose-gc, for the memory soak).
 */
export function startTemplateApp(
  dist: string,
  kind: 'api' | 'worker',
  env: Env,
  options: { cwd: string; port?: number; nodeArgs?: string[] },
): Promise<AppProcess> {
  const app = startNode(join(dist, 'apps', kind, 'src', 'main.js'), { ...env, BENCH_JOBS_DIST: dist }, {
    cwd: options.cwd,
    kind,
    portVar: kind === 'worker' ? 'WORKER_PORT' : 'PORT',
    port: options.port,
    nodeArgs: [...imageNodeFlags(kind), '--expose-gc', '--require', join(__dirname, 'bench-jobs.preload.js'), ...(options.nodeArgs ?? [])],
  });
  // An API that takes the bench's key (BENCH_KEY_ENV) gets it on every request of the bench's clients.
  return kind === 'api' && env.API_KEYS?.includes(BENCH_API_KEY) ? app.then((api) => (sendKeyTo(api.url), api)) : app;
}

/**
 * The template's two apps, built by `nest build` into `dist` (`root`/dist unless told otherwise),
 * with the worker's pool threads on SCHED_IDLE as the image runs them (`env` may say otherwise), and
 * the bench's job types (startTemplateApp).
 */
export async function startTemplate(
  root: string,
  env: Env,
  options: { api?: number; worker?: number; dist?: string; nodeArgs?: string[] } = {},
): Promise<{ api: AppProcess; worker: AppProcess }> {
  const dist = options.dist ?? join(root, 'dist');
  if (!existsSync(join(dist, 'apps', 'api', 'src', 'main.js'))) throw new Error(`no build at ${dist}: run \`npx nest build\` first (npm run bench does)`);
  env = { ...IMAGE_ENV, ...env };
  const [api, worker] = await Promise.all([
    startTemplateApp(dist, 'api', env, { cwd: root, port: options.api, nodeArgs: options.nodeArgs }),
    startTemplateApp(dist, 'worker', env, { cwd: root, port: options.worker, nodeArgs: options.nodeArgs }),
  ]);
  return { api, worker };
}

/** Stops processes (SIGSTOP) between the legs they sit out: no start-up, no warm-up lost. */
export const park = (ps: AppProcess[]) => ps.forEach((p) => p.signal('SIGSTOP'));
/** Resumes parked processes (a stopped process takes SIGTERM only once resumed). */
export const resume = (ps: AppProcess[]) => ps.forEach((p) => p.signal('SIGCONT'));

/** The pid of the bench's own redis-server; undefined on a shared one (REDIS_URL), whose CPU is not ours. */
export async function redisServerPid(redis: BenchRedis, client: IORedis): Promise<number | undefined> {
  if (!redis.own) return undefined;
  return Number(/process_id:(\d+)/.exec(await client.info('server'))?.[1]) || undefined;
}

/** Resident set size of a process, from /proc (Linux). */
export function rssBytes(pid: number): number {
  try {
    const match = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) * 1024 : NaN;
  } catch {
    return NaN;
  }
}

/** CPU time (user + system) a process has used so far, in ms, from /proc (Linux; 10 ms ticks). */
export function cpuMs(pid: number): number {
  try {
    // Fields after the command name (which may hold spaces): utime and stime are the 12th and 13th.
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return NaN;
  }
}

export interface BenchRedis {
  url: string;
  /** True when the bench started this server: nothing else uses it, so command counts are ours. */
  own: boolean;
  stop(): Promise<void>;
}

/** REDIS_URL when given (it must answer), else a redis-server of our own on a free port. */
export async function startRedis(url: string | undefined): Promise<BenchRedis> {
  if (url) {
    if (!(await redisReachable(url))) throw new Error(`REDIS_URL ${url.replace(/\/\/[^@]*@/, '//***@')} does not answer`);
    return { url, own: false, stop: async () => undefined };
  }
  const server = await RedisServer.start();
  return { url: server.url, own: true, stop: () => server.stop() };
}

/** Total commands Redis has executed so far (INFO commandstats), to count commands per job. */
export async function redisCommandCount(redis: IORedis): Promise<number> {
  let total = 0;
  for (const calls of (await redisCommandCalls(redis)).values()) total += calls;
  return total;
}

/** Calls of each command Redis has executed so far (INFO commandstats), by name (`evalsha`, `zadd`, `client|setname`…). */
export async function redisCommandCalls(redis: IORedis): Promise<Map<string, number>> {
  const info = await redis.info('commandstats');
  return new Map([...info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)].map(([, name, calls]) => [name, Number(calls)]));
}

/** Deletes every key under `prefix` (used when the bench ran on someone else's Redis). */
export async function deleteKeys(redis: IORedis, prefix: string): Promise<number> {
  let deleted = 0;
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length > 0) deleted += await redis.unlink(...keys);
  } while (cursor !== '0');
  return deleted;
}

/** Reads a Prometheus gauge or counter (summed over series matching `labels`) from `url`/metrics. */
export async function readMetric(url: string, name: string, labels: Record<string, string> = {}): Promise<number> {
  const text = await (await fetch(`${url}/metrics`)).text();
  let total = 0;
  let found = false;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) {
      total += Number(line.split(' ').pop());
      found = true;
    }
  }
  return found ? total : NaN;
}

/** Times the kernel took the CPU from a process's main thread (its event loop): nonvoluntary context switches, from /proc (Linux). */
export function preemptions(pid: number): number {
  try {
    const match = /^nonvoluntary_ctxt_switches:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) : NaN;
  } catch {
    return NaN;
  }
}

/** Resolves once `worker` runs a job on each of its `threads` pool threads (the CPU is then saturated). */
export async function poolSaturated(worker: AppProcess, threads: number, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if ((await worker.metric('nest_offload_jobs_active')) >= threads) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error('the worker pool never became saturated');
}
