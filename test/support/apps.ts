import { ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { CPU_LOG, logCpu, processCpu, suiteName } from './cpu-log';
import { runEnv, runPrefix } from './test-run';
import { freePort, waitFor } from './wait';

const ROOT = join(__dirname, '..', '..');
const ENTRY = { api: 'dist/apps/api/src/main.js', worker: 'dist/apps/worker/src/main.js' } as const;
const running = new Set<ChildProcess>();

// A test that dies half-way must not leave apps running: kill whatever is left when Jest's worker exits.
process.once('exit', () => {
  for (const proc of running) proc.kill('SIGKILL');
});

export interface LogLine {
  level: number;
  msg: string;
  [key: string]: unknown;
}

/** One built app (`node dist/...`) running as a child process, with its JSON log lines captured. */
export class AppProcess {
  readonly logs: LogLine[] = [];
  readonly stderr: string[] = [];
  readonly exited: Promise<number | null>;
  private cpu?: { ready?: number; beforeStop?: number };

  constructor(
    readonly kind: 'api' | 'worker',
    readonly port: number,
    private readonly proc: ChildProcess,
    /** The environment it was started with (what a stall report reads to find its Redis). */
    readonly env: AppEnv = {},
  ) {
    running.add(proc);
    this.exited = new Promise((resolve) =>
      // why 'close', not 'exit': it fires once stdout and stderr are drained too, so the logs are complete.
      proc.once('close', (code) => {
        running.delete(proc);
        resolve(code);
      }),
    );
    let buffer = '';
    proc.stdout!.on('data', (chunk: Buffer) => {
      buffer += chunk.toString();
      const lines = buffer.split('\n');
      buffer = lines.pop()!;
      for (const line of lines) {
        try {
          this.logs.push(JSON.parse(line) as LogLine);
        } catch {
          this.stderr.push(line);
        }
      }
    });
    proc.stderr!.on('data', (chunk: Buffer) => this.stderr.push(chunk.toString()));
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get pid(): number {
    return this.proc.pid!;
  }

  get alive(): boolean {
    return this.proc.exitCode === null && this.proc.signalCode === null;
  }

  signal(signal: NodeJS.Signals): void {
    if (!this.alive) return;
    if (this.cpu) this.cpu.beforeStop ??= processCpu(this.pid);
    this.proc.kill(signal);
  }

  /**
   * With TEST_CPU_LOG set (see cpu-log.ts): logs, once it has exited, its CPU-s when it was found
   * started (`started`: it was waited for) and when it was first told to stop (what it cost from then
   * on is in its suite's line).
   */
  measureCpu(started: boolean): void {
    const testPath = (globalThis as { expect?: { getState(): { testPath?: string } } }).expect?.getState().testPath;
    this.cpu = { ready: started ? processCpu(this.pid) : undefined };
    void this.exited.then(() =>
      logCpu({ suite: testPath && suiteName(testPath), kind: this.kind, readyCpu: this.cpu!.ready, beforeStopCpu: this.cpu!.beforeStop }),
    );
  }

  /** Sends `signal` and resolves with the exit code (null when killed by a signal). */
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
    this.signal(signal);
    return this.exited;
  }

  async ready(timeoutMs = 20_000): Promise<void> {
    let last = '';
    await waitFor(
      async () => {
        const res = await fetch(`${this.url}/health/ready`);
        last = await res.text();
        return res.ok;
      },
      { timeoutMs, what: `${this.kind} ready` },
    ).catch((error: Error) => {
      throw new Error(`${error.message}; last readiness answer: ${last}`);
    });
  }

  async live(timeoutMs = 20_000): Promise<void> {
    await waitFor(async () => (await fetch(`${this.url}/health/live`)).ok, { timeoutMs, what: `${this.kind} live` });
  }

  /** A Prometheus counter's value summed over the series whose labels include `labels`. */
  async metric(name: string, labels: Record<string, string> = {}): Promise<number> {
    const text = await (await fetch(`${this.url}/metrics`)).text();
    let total = 0;
    for (const line of text.split('\n')) {
      if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
      if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) total += Number(line.split(' ').pop());
    }
    return total;
  }
}

export type AppEnv = Record<string, string | undefined>;

/**
 * Starts a built app (of this tree, or of the copy at `root`) with `env` on a free port; resolves once
 * it is ready (or live, for `waitFor: 'live'`) within `timeoutMs`. why 60 s: an app starts in ~2 s on
 * a quiet host, but on a shared one under load a start took over 20 s; a longer bound costs nothing
 * when the app starts, and only delays the failure of one that never will.
 */
export async function startApp(
  kind: 'api' | 'worker',
  env: AppEnv,
  { waitFor: until = 'ready', root = ROOT, timeoutMs = 60_000 }: { waitFor?: 'ready' | 'live' | 'none'; root?: string; timeoutMs?: number } = {},
): Promise<AppProcess> {
  const port = await freePort();
  const portVar = kind === 'api' ? 'PORT' : 'WORKER_PORT';
  const proc = spawn(process.execPath, [ENTRY[kind]], {
    cwd: root,
    // why debug: the workers write a job's start and end at debug level, and ledgers count runs from them.
    // why API_DOCS off unless a test turns it on: as in production; building the document costs each
    // start ~0.1 CPU-s (~10 CPU-s of `npm test`), and the docs suites check it.
    env: { PATH: process.env.PATH, ...runEnv(), NODE_ENV: 'test', LOG_LEVEL: 'debug', HOST: '127.0.0.1', API_DOCS: 'false', ...env, [portVar]: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const app = new AppProcess(kind, port, proc, env);
  try {
    if (until === 'ready') await app.ready(timeoutMs);
    if (until === 'live') await app.live(timeoutMs);
    if (CPU_LOG) app.measureCpu(until !== 'none');
  } catch (error) {
    app.signal('SIGKILL');
    const lastLines = app.logs.slice(-5).map((l) => JSON.stringify(l)).join('\n');
    throw new Error(`${kind} did not start: ${String(error)}\n${app.stderr.join('')}\n${lastLines}`);
  }
  return app;
}

/**
 * Runs a plain Node script (a test fixture, not one of the apps) as a child process with `env`, its
 * JSON log lines captured like an app's. It is killed with the other children if the test dies.
 */
export function startScript(file: string, env: AppEnv): AppProcess {
  const proc = spawn(process.execPath, [file], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, ...runEnv(), NODE_ENV: 'test', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return new AppProcess('worker', 0, proc, env);
}

/** A private key prefix per test file, so tests share a Redis without seeing each other's jobs. */
export function uniquePrefix(name: string): string {
  return `${runPrefix()}-${name}-${randomBytes(4).toString('hex')}`;
}

/** The env both apps of one test share. */
export function stackEnv(name: string, extra: AppEnv = {}): AppEnv {
  return {
    REDIS_URL: process.env.E2E_REDIS_URL,
    REDIS_PREFIX: uniquePrefix(name),
    WORKER_THREADS: '2',
    // why 0, not the apps' default 19: `npm test` runs two lanes of suites side by side, and a pool
    // thread at nice 19 yields to the other lane's busy processes (the bare-host failure mode of the
    // README), so jobs that take milliseconds alone took seconds. Tests of the scheduling itself set it.
    WORKER_NICE: '0',
    CHAOS_JOBS: 'true',
    SHUTDOWN_TIMEOUT_MS: '5000',
    ...extra,
  };
}

/** An API and a worker sharing one env. */
export async function startStack(env: AppEnv): Promise<{ api: AppProcess; worker: AppProcess; stop(): Promise<void> }> {
  // why startAll: an API that fails to start must not leave the worker running (and the other way round).
  const [api, worker] = await startAll<[AppProcess, AppProcess]>([startApp('api', env), startApp('worker', env)]);
  return {
    api,
    worker,
    stop: async () => {
      await Promise.all([api.stop(), worker.stop()]);
    },
  };
}

type Stoppable = { stop(): Promise<unknown> } | { close(): Promise<unknown> };

/**
 * Starts several things at once (apps, scripts, a browser). If any of them fails to start, the ones
 * that did are stopped before the error is rethrown, so a half-failed set-up leaves nothing running.
 */
export async function startAll<T extends readonly Stoppable[]>(starts: { readonly [K in keyof T]: Promise<T[K]> }): Promise<T> {
  const results = await Promise.allSettled(starts as readonly Promise<Stoppable>[]);
  const failure = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (!failure) return results.map((r) => (r as PromiseFulfilledResult<Stoppable>).value) as unknown as T;
  await Promise.allSettled(
    results.map((r) => (r.status === 'fulfilled' ? ('stop' in r.value ? r.value.stop() : r.value.close()) : undefined)),
  );
  throw failure.reason;
}
