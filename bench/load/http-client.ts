import { Agent, request } from 'node:http';
import { keyHeader } from './api-key';

export interface HttpReply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/**
 * A keep-alive HTTP/1.1 client on `node:http`: cheaper per request than fetch, so the client adds
 * little to the latencies it measures.
 */
export class HttpClient {
  private readonly agent: Agent;
  /** The bench's API key, when `baseUrl` is a template API started with it (see api-key.ts). */
  private readonly auth: Record<string, string>;

  constructor(
    readonly baseUrl: string,
    maxSockets = 256,
  ) {
    this.agent = new Agent({ keepAlive: true, maxSockets, maxFreeSockets: maxSockets });
    this.auth = keyHeader(baseUrl);
  }

  send(method: string, path: string, options: { json?: unknown; headers?: Record<string, string>; timeoutMs?: number } = {}): Promise<HttpReply> {
    const url = new URL(path, this.baseUrl);
    const body = options.json === undefined ? undefined : Buffer.from(JSON.stringify(options.json));
    const headers: Record<string, string | number> = { ...this.auth, ...options.headers };
    if (body) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = body.length;
    }
    return new Promise((resolve, reject) => {
      const req = request(
        { agent: this.agent, host: url.hostname, port: url.port, path: url.pathname + url.search, method, headers, timeout: options.timeoutMs ?? 60_000 },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString() }));
          res.on('error', reject);
        },
      );
      req.on('timeout', () => req.destroy(new Error(`${method} ${path}: timed out`)));
      req.on('error', reject);
      req.end(body);
    });
  }

  async json<T>(method: string, path: string, options: { json?: unknown; headers?: Record<string, string>; timeoutMs?: number } = {}): Promise<{ status: number; body: T }> {
    const reply = await this.send(method, path, options);
    let body: unknown;
    try {
      body = reply.text ? JSON.parse(reply.text) : undefined;
    } catch {
      throw new Error(`${method} ${path}: HTTP ${reply.status} with a body that is not JSON: ${reply.text.slice(0, 200)}`);
    }
    return { status: reply.status, body: body as T };
  }

  close(): void {
    this.agent.destroy();
  }
}

export interface LoopResult<T> {
  /** Milliseconds each task took, in completion order. */
  latencies: number[];
  results: T[];
  errors: string[];
  elapsedMs: number;
}

/**
 * Runs `task` from `concurrency` parallel loops, each starting its next task when the last one ends
 * (a closed loop), until `total` tasks ran or `durationMs` passed. Bounded either way.
 */
export async function closedLoop<T>(options: { concurrency: number; total?: number; durationMs?: number; task: (i: number) => Promise<T> }): Promise<LoopResult<T>> {
  const { concurrency, total = Infinity, durationMs = Infinity, task } = options;
  if (!Number.isFinite(total) && !Number.isFinite(durationMs)) throw new Error('closedLoop needs a total or a duration');
  const latencies: number[] = [];
  const results: T[] = [];
  const errors: string[] = [];
  const started = performance.now();
  let next = 0;
  const loop = async () => {
    while (next < total && performance.now() - started < durationMs) {
      const i = next++;
      const t0 = performance.now();
      try {
        results.push(await task(i));
        latencies.push(performance.now() - t0);
      } catch (error) {
        errors.push(error instanceof Error ? error.message : String(error));
        if (errors.length > 20) throw new Error(`too many errors; first: ${errors[0]}`);
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, loop));
  return { latencies, results, errors, elapsedMs: performance.now() - started };
}

/**
 * Starts `task` at a steady `rate` per second for `durationMs` (an open loop: a slow answer does not
 * delay the next start), then waits for the stragglers. Latencies are measured from each start.
 */
export async function openLoop<T>(options: { rate: number; durationMs: number; task: (i: number) => Promise<T> }): Promise<LoopResult<T>> {
  const { rate, durationMs, task } = options;
  const total = Math.max(1, Math.round((rate * durationMs) / 1000));
  const latencies: number[] = [];
  const results: T[] = [];
  const errors: string[] = [];
  const inFlight: Promise<void>[] = [];
  const started = performance.now();
  for (let i = 0; i < total; ) {
    // why: start everything that is due now; timers are coarse, so catch up rather than drift.
    while (i < total && performance.now() - started >= (i * 1000) / rate) {
      const t0 = performance.now();
      const n = i++;
      inFlight.push(
        task(n).then(
          (result) => {
            results.push(result);
            latencies.push(performance.now() - t0);
          },
          (error: unknown) => void errors.push(error instanceof Error ? error.message : String(error)),
        ),
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  await Promise.all(inFlight);
  return { latencies, results, errors, elapsedMs: performance.now() - started };
}
