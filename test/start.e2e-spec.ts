import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { stackEnv } from './support/apps';
import { runEnv } from './support/test-run';
import { freePort, waitFor } from './support/wait';

/**
 * `npm start` stopped the way a process manager, an IDE's stop button or `timeout` stops it: one
 * signal to npm's pid, nothing to the rest of its process group. Each of SIGTERM, SIGINT and SIGHUP
 * stops scripts/start.mjs, the API and the worker, each app through its own clean shutdown, and
 * frees their ports. Runs `npm start -- --no-build` (`npm test` has built the apps; the build is the
 * step before these). Linux: the processes are read from /proc.
 */
const ROOT = join(__dirname, '..');

/** Every process below `pid`, from /proc. */
function descendants(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc').filter((e) => /^\d+$/.test(e))) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    // why after the last ')': the command name in parentheses may hold spaces; the parent's pid is the 2nd field after it
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
  }
  const found: number[] = [];
  for (let queue = [pid]; queue.length > 0; ) {
    const next = children.get(queue.shift()!) ?? [];
    found.push(...next);
    queue.push(...next);
  }
  return found;
}

const alive = (pid: number) => {
  try {
    return process.kill(pid, 0);
  } catch {
    return false;
  }
};

const SIGNALS = ['SIGTERM', 'SIGINT', 'SIGHUP'] as const;
type Signal = (typeof SIGNALS)[number];

/** Starts `npm start -- --no-build`, waits until both apps are ready, sends `signal` to npm alone; says what was left and printed. */
async function startThenSignal(signal: Signal): Promise<{ started: number; left: number[]; stopped?: string[]; ports: Array<{ port: number; open: boolean }> }> {
  const [port, workerPort] = [await freePort(), await freePort()];
  const env = { ...process.env, ...runEnv(), ...stackEnv('start'), PORT: String(port), WORKER_PORT: String(workerPort), HOST: '127.0.0.1', LOG_FORMAT: 'json' };
  // why detached: npm leads a process group of its own, as under a process manager, so the signal reaches npm alone
  const npm = spawn('npm', ['start', '--', '--no-build'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let out = '';
  npm.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  npm.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const closed = new Promise((resolve) => npm.stdout.on('close', resolve)); // once every process writing to it is gone
  let started: number[] = [];
  try {
    for (const url of [`http://127.0.0.1:${port}/health/ready`, `http://127.0.0.1:${workerPort}/health/ready`]) {
      await waitFor(async () => (await fetch(url)).ok, { timeoutMs: 60_000, what: () => `${url} under npm start:\n${out.slice(-3000)}` });
    }
    started = descendants(npm.pid!);
    process.kill(npm.pid!, signal);
    const gone = () => started.every((pid) => !alive(pid)) && !alive(npm.pid!);
    await waitFor(gone, { timeoutMs: 20_000, what: () => `every process of npm start to end after ${signal}:\n${out.slice(-3000)}` }).catch(() => undefined);
    if (gone()) await closed;
    const ports = await Promise.all(
      [port, workerPort].map(async (p) => ({ port: p, open: await fetch(`http://127.0.0.1:${p}/health/live`).then(() => true, () => false) })),
    );
    return { started: started.length, left: started.filter(alive), stopped: /^\[start\] stopped: (.*)$/m.exec(out)?.[1].split(', ').sort(), ports };
  } finally {
    // why `started` too: what outlives npm is no longer below it
    for (const pid of new Set([...started, ...descendants(npm.pid!), npm.pid!])) if (alive(pid)) process.kill(pid, 'SIGKILL');
  }
}

describe('npm start, stopped by a signal to npm alone', () => {
  const seen = {} as Record<Signal, Awaited<ReturnType<typeof startThenSignal>>>;
  // why one after the other: three stacks starting at once would slow the suites of the other lane
  beforeAll(async () => {
    for (const signal of SIGNALS) seen[signal] = await startThenSignal(signal);
  }, 180_000);

  it.each(SIGNALS)('%s stops the API, the worker and start.mjs, each app cleanly, and frees their ports', (signal) => {
    const { started, left, stopped, ports } = seen[signal];
    expect(started).toBeGreaterThanOrEqual(3); // start.mjs, the API, the worker
    expect({ left, stopped }).toEqual({ left: [], stopped: ['api (exit 0)', 'worker (exit 0)'] });
    expect(ports.filter((p) => p.open)).toEqual([]);
  });
});
