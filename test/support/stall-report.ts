import { execFile } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { promisify } from 'node:util';
import IORedis, { type RedisOptions } from 'ioredis';
import type { AppProcess } from './apps';

const exec = promisify(execFile);

/**
 * What every process and Redis was doing when a test gave up waiting for jobs: each app's threads
 * (kernel state, where they sleep, CPU used), its event-loop delay and readiness, where its stdout
 * goes and how much of it is unread, the busiest processes on the machine, and each Redis's role,
 * clients (and what they block on) and queue keys. A stalled test prints it, so a flake explains
 * itself instead of being retried.
 */
export async function stallReport(apps: readonly (AppProcess | undefined)[]): Promise<string> {
  const live = apps.filter((a): a is AppProcess => !!a);
  const sections = await Promise.all([
    ...live.map((app) => appSection(app)),
    machineSection(),
    ...redisTargets(live).map((t) => redisSection(t)),
  ]);
  return `[stall report]\n${sections.join('\n')}`;
}

const read = (path: string) => {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
};

/** Threads of `pid`: name, state (R running, S sleeping, D disk…), kernel wait channel, CPU ticks. */
function threads(pid: number): string[] {
  let tids: string[] = [];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return ['(gone)'];
  }
  return tids.map((tid) => {
    const stat = read(`/proc/${pid}/task/${tid}/stat`);
    // Fields after the command (which may hold spaces) start after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const comm = read(`/proc/${pid}/task/${tid}/comm`).trim();
    const wchan = read(`/proc/${pid}/task/${tid}/wchan`).trim() || '-';
    return `${tid} ${comm} state=${fields[0]} wchan=${wchan} utime=${fields[11]} stime=${fields[12]} nice=${fields[16]} policy=${fields[38]}`;
  });
}

function fdTarget(pid: number, fd: number): string {
  try {
    return readlinkSync(`/proc/${pid}/fd/${fd}`);
  } catch {
    return '?';
  }
}

/** Unread bytes queued on the sockets behind a process's stdout and stderr (`ss`' Recv-Q/Send-Q). */
async function socketQueues(pid: number): Promise<string> {
  const inodes = [1, 2].map((fd) => /socket:\[(\d+)\]/.exec(fdTarget(pid, fd))?.[1]).filter(Boolean);
  if (inodes.length === 0) return 'not sockets';
  const { stdout } = await exec('ss', ['-xanp'], { timeout: 5000 }).catch(() => ({ stdout: '' }));
  return (
    stdout
      .split('\n')
      .filter((line) => inodes.some((inode) => new RegExp(`\\s${inode}\\s`).test(line)))
      .map((line) => line.replace(/\s+/g, ' ').trim())
      .join('; ') || 'not listed'
  );
}

async function probe(url: string, limit = 300): Promise<string> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
    return `${res.status} ${(await res.text()).slice(0, limit)}`;
  } catch (error) {
    return `no answer (${error instanceof Error ? error.message : String(error)})`;
  }
}

async function appSection(app: AppProcess): Promise<string> {
  const metrics = await probe(`${app.url}/metrics`, Infinity);
  const pick = /^nest_offload_(nodejs_eventloop_lag_(p99|max)_seconds|jobs_active|pool_threads|redis_connected)(\{[^}]*\})? \S+$/gm;
  const figures = [...metrics.matchAll(pick)]
    .map((m) => m[0])
    .join(', ');
  const lines = [
    `${app.kind} pid ${app.pid} port ${app.port} alive=${app.alive}`,
    `  ready: ${await probe(`${app.url}/health/ready`)}`,
    `  metrics: ${figures || metrics.slice(0, 200)}`,
    `  stdout -> ${fdTarget(app.pid, 1)}; queues: ${await socketQueues(app.pid)}`,
    ...threads(app.pid).map((t) => `  thread ${t}`),
    `  last log lines: ${app.logs.slice(-5).map((l) => JSON.stringify(l)).join(' | ')}`,
  ];
  if (app.stderr.length > 0) lines.push(`  stderr: ${app.stderr.join('').slice(-500)}`);
  return lines.join('\n');
}

async function machineSection(): Promise<string> {
  const { stdout } = await exec('ps', ['-eo', 'pid,ppid,ni,cls,pcpu,etimes,stat,wchan:24,args', '--sort=-pcpu'], { timeout: 5000 }).catch(() => ({ stdout: '' }));
  const load = read('/proc/loadavg').trim();
  return [`machine: loadavg ${load}`, ...stdout.split('\n').slice(0, 16).map((l) => `  ${l.slice(0, 220)}`)].join('\n');
}

interface RedisTarget {
  label: string;
  prefix: string;
  options: RedisOptions;
}

/** The Redis each distinct prefix of the apps uses, as their env names it. */
function redisTargets(apps: AppProcess[]): RedisTarget[] {
  const seen = new Map<string, RedisTarget>();
  for (const { env } of apps) {
    const prefix = env.REDIS_PREFIX ?? 'nest-offload';
    const password = env.REDIS_PASSWORD;
    let target: RedisTarget | undefined;
    if (env.REDIS_SENTINELS) {
      const sentinels = env.REDIS_SENTINELS.split(',').map((s) => ({ host: s.slice(0, s.lastIndexOf(':')), port: Number(s.slice(s.lastIndexOf(':') + 1)) }));
      target = { label: `sentinel ${env.REDIS_SENTINELS}`, prefix, options: { sentinels, name: env.REDIS_SENTINEL_NAME, password, sentinelPassword: password } };
    } else if (env.REDIS_URL && !env.REDIS_CLUSTER_NODES) {
      target = { label: env.REDIS_URL.replace(/\/\/[^@]*@/, '//'), prefix, options: { ...urlOptions(env.REDIS_URL), password: password ?? urlOptions(env.REDIS_URL).password } };
    }
    if (target) seen.set(`${target.label} ${prefix}`, target);
  }
  return [...seen.values()];
}

function urlOptions(url: string) {
  const u = new URL(url);
  return { host: u.hostname, port: Number(u.port || 6379), password: u.password ? decodeURIComponent(u.password) : undefined };
}

async function redisSection({ label, prefix, options }: RedisTarget): Promise<string> {
  const redis = new IORedis({ ...options, lazyConnect: true, connectTimeout: 2000, commandTimeout: 3000, maxRetriesPerRequest: 0, retryStrategy: () => null });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    const role = ((await redis.call('ROLE')) as unknown[]).slice(0, 3);
    const clients = ((await redis.call('CLIENT', 'LIST')) as string)
      .split('\n')
      .filter((l) => l.includes('name=nest-offload') || l.includes('cmd=bzpopmin') || l.includes('cmd=xread'))
      .map((l) => {
        const f = Object.fromEntries(l.split(' ').map((kv) => kv.split('=') as [string, string]));
        return `${f.name || '-'} ${f.addr} age=${f.age} idle=${f.idle} flags=${f.flags} cmd=${f.cmd}`;
      });
    const queueNames = [...new Set((await redis.keys(`${prefix}:{*}:*:meta`)).map((k) => /\{([^}]+)\}/.exec(k)?.[1]).filter((q): q is string => !!q))];
    const queues = await Promise.all(
      queueNames.map(async (q) => {
        const base = `${prefix}:{${q}}:${q}`;
        const [wait, active, prioritized, delayed, completed, failed, marker, paused] = await Promise.all([
          redis.llen(`${base}:wait`),
          redis.lrange(`${base}:active`, 0, 9),
          redis.zcard(`${base}:prioritized`),
          redis.zcard(`${base}:delayed`),
          redis.zcard(`${base}:completed`),
          redis.zcard(`${base}:failed`),
          redis.zrange(`${base}:marker`, 0, -1, 'WITHSCORES'),
          redis.hget(`${base}:meta`, 'paused'),
        ]);
        return `  queue ${q}: wait=${wait} prioritized=${prioritized} delayed=${delayed} active=[${active.join(',')}] completed=${completed} failed=${failed} marker=${JSON.stringify(marker)} paused=${paused ?? '-'}`;
      }),
    );
    return [`redis ${label} (prefix ${prefix}): role ${JSON.stringify(role)}`, ...queues, ...clients.map((c) => `  client ${c}`)].join('\n');
  } catch (error) {
    return `redis ${label}: unreachable from the report (${error instanceof Error ? error.message : String(error)})`;
  } finally {
    redis.disconnect();
  }
}
