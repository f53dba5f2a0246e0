import { ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import IORedis from 'ioredis';
import { freePort, waitFor } from './wait';

/** True when a Redis answers PING at `url` within a second. */
export async function redisReachable(url: string): Promise<boolean> {
  const client = new IORedis(url, { lazyConnect: true, connectTimeout: 1000, maxRetriesPerRequest: 0, retryStrategy: () => null });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return (await client.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

/**
 * The queue Redis's settings beyond its defaults, as docker/compose.yaml and the dev Kubernetes
 * overlay run it (test/deploy.e2e-spec.ts and test/kubernetes.e2e-spec.ts check they agree), so the
 * tests and the bench run the Redis the template ships. why a larger hash value: a BullMQ job is a
 * hash whose `data`, `opts` and `returnvalue` each pass Redis's 64-byte default, which makes it a
 * hash table; up to 1 KB each it stays a listpack: a thumbnail job's hash takes 1,144 B instead of
 * 1,816 (MEMORY USAGE), for a scan of its ~13 fields on each access.
 */
export const QUEUE_REDIS_ARGS = ['--hash-max-listpack-value', '1024'] as const;

/**
 * A redis-server of the test's own, on a free port and a fresh directory: for tests that restart
 * Redis, need persistence, or when no shared Redis is reachable.
 */
export class RedisServer {
  private proc?: ChildProcess;
  private readonly dir = mkdtempSync(join(tmpdir(), 'nest-offload-redis-'));

  private constructor(
    readonly port: number,
    private readonly options: { appendonly: boolean; maxmemoryPolicy?: string },
  ) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  static async start(options: { appendonly?: boolean; maxmemoryPolicy?: string } = {}): Promise<RedisServer> {
    return RedisServer.startOnPort(await freePort(), options);
  }

  static async startOnPort(port: number, options: { appendonly?: boolean; maxmemoryPolicy?: string } = {}): Promise<RedisServer> {
    const server = new RedisServer(port, { appendonly: options.appendonly ?? false, ...options });
    await server.startProcess();
    return server;
  }

  /** Starts the server again on the same port and directory (its data survives with appendonly). */
  async startProcess(): Promise<void> {
    const args = ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--dir', this.dir];
    args.push('--appendonly', this.options.appendonly ? 'yes' : 'no', '--appendfsync', 'always');
    args.push(...QUEUE_REDIS_ARGS);
    if (this.options.maxmemoryPolicy) args.push('--maxmemory-policy', this.options.maxmemoryPolicy);
    this.proc = spawn('redis-server', args, { stdio: 'ignore' });
    await waitFor(() => redisReachable(this.url), { timeoutMs: 10_000, what: `redis-server on port ${this.port}` });
  }

  /** Stops the server (SIGTERM: with appendonly, everything written so far is on disk). */
  async stopProcess(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    const proc = this.proc;
    if (!proc || proc.exitCode !== null) return;
    const exited = new Promise((resolve) => proc.once('exit', resolve));
    proc.kill(signal);
    await exited;
  }

  /** Sends `signal` to the running server without waiting: SIGSTOP freezes it (connections stay open, nothing answers), SIGCONT thaws it. */
  signalProcess(signal: NodeJS.Signals): void {
    if (this.proc && this.proc.exitCode === null) this.proc.kill(signal);
  }

  async stop(): Promise<void> {
    await this.stopProcess();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
