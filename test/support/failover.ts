import { setTimeout as sleep } from 'node:timers/promises';
import type { AppProcess } from './apps';
import { submit } from './http';
import type { Ledger } from './ledger';
import { waitFor } from './wait';

/** One API under load with the ledger of what it accepted. */
export interface LoadTarget {
  name: string;
  api: AppProcess;
  ledger: Ledger;
}

export interface Attempt {
  target: string;
  /** The job id the API answered with (accepted submissions only). */
  id?: string;
  phase: string;
  at: number;
  ms: number;
  status: number;
  code?: string;
  contentType: string | null;
  retryAfter: string | null;
}

let unique = 0;

/** A small job no other submission shares (so nothing is answered from the cache or joined). */
export function distinctEcho(): { n: number } {
  return { n: ++unique };
}

/**
 * Steady submissions to several APIs: `lanes` clients per API, each posting a distinct job (mostly
 * `echo` on the default queue, every `fanOutEvery`-th a `fan-out` of two on the heavy queue)
 * and pausing `pauseMs`. Every reply is recorded with the phase the test is in when it was sent.
 */
export class SubmitLoad {
  readonly attempts: Attempt[] = [];
  phase = 'before';
  private stopping = false;
  private running?: Promise<void>;

  constructor(
    private readonly targets: LoadTarget[],
    private readonly options: { lanes: number; pauseMs: number; fanOutEvery: number },
  ) {}

  start(): void {
    const lane = async (target: LoadTarget, laneIndex: number) => {
      for (let i = 0; !this.stopping; i++) {
        const fanOut = this.options.fanOutEvery > 0 && (i + laneIndex) % this.options.fanOutEvery === 0;
        const [type, input, runs] = fanOut
          ? (['fan-out', { parts: 2, tag: `load-${++unique}` }, 2] as const)
          : (['echo', distinctEcho(), 1] as const);
        const phase = this.phase;
        const t0 = Date.now();
        const reply = await submit(target.api.url, type, input, { headers: target.ledger.headers }).catch(() => ({ status: 0, headers: new Headers(), body: undefined }));
        target.ledger.record(reply, type, input, { runs });
        this.attempts.push({
          target: target.name,
          id: reply.body?.id,
          phase,
          at: t0,
          ms: Date.now() - t0,
          status: reply.status,
          code: reply.body?.code,
          contentType: reply.headers.get('content-type'),
          retryAfter: reply.headers.get('retry-after'),
        });
        await sleep(this.options.pauseMs);
      }
    };
    this.running = Promise.all(this.targets.flatMap((t) => Array.from({ length: this.options.lanes }, (_, i) => lane(t, i)))).then(() => undefined);
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await this.running;
  }

  /**
   * Waits until every target has accepted `count` submissions sent in the current phase: a phase
   * long enough to matter, measured in jobs rather than seconds (a busy host is slower, not shorter).
   */
  async acceptedInPhase(count: number, timeoutMs = 30_000): Promise<void> {
    const phase = this.phase;
    const names = [...new Set(this.targets.map((t) => t.name))];
    await waitFor(() => names.every((name) => this.accepted(name, phase) >= count), {
      timeoutMs,
      intervalMs: 20,
      what: () => `${count} accepted submissions per API in phase "${phase}" (${names.map((n) => `${n}: ${this.accepted(n, phase)}`).join(', ')})`,
    });
  }

  accepted(target: string, phase?: string): number {
    return this.attempts.filter((a) => a.target === target && (!phase || a.phase === phase) && (a.status === 200 || a.status === 202)).length;
  }

  /** Accepted submissions to `target` by the phase they were sent in, in the order the phases came. */
  acceptedByPhase(target: string): Record<string, number> {
    const out: Record<string, number> = {};
    for (const a of this.attempts) if (a.target === target) out[a.phase] = (out[a.phase] ?? 0) + (a.status === 200 || a.status === 202 ? 1 : 0);
    return out;
  }

  /** Refusals by status and code, e.g. `503 QUEUE_UNAVAILABLE x12`. */
  refusals(target: string): Record<string, number> {
    const out: Record<string, number> = {};
    for (const a of this.attempts) {
      if (a.target !== target || a.status === 200 || a.status === 202) continue;
      const key = `${a.status} ${a.code ?? ''}`.trim();
      out[key] = (out[key] ?? 0) + 1;
    }
    return out;
  }

  /** The slowest answer to `target`, in ms, by phase. */
  slowest(target: string): Record<string, number> {
    const out: Record<string, number> = {};
    for (const a of this.attempts) if (a.target === target) out[a.phase] = Math.max(out[a.phase] ?? 0, a.ms);
    return out;
  }

  /** Time from `since` to the first accepted submission to `target` sent after it. */
  recoveredAfter(target: string, since: number): number | undefined {
    const first = this.attempts.filter((a) => a.target === target && a.at >= since && (a.status === 200 || a.status === 202)).sort((a, b) => a.at - b.at)[0];
    return first ? first.at + first.ms - since : undefined;
  }
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

export interface LatencyStats {
  n: number;
  p50: number;
  p99: number;
  /** The API's own account of the WAIT step (Server-Timing `replicas`), where it gave one. */
  wait?: { n: number; p50: number; p99: number };
}

/**
 * Submit latency of each API, measured side by side: one caller, `rounds` alternating rounds of
 * `perRound` distinct `echo` submissions per API, so both see the same load on the machine.
 */
export async function submitLatency(
  apis: Array<{ name: string; api: AppProcess; headers?: Record<string, string> }>,
  { rounds = 4, perRound = 60 } = {},
): Promise<Map<string, LatencyStats>> {
  const samples = new Map(apis.map(({ name }) => [name, [] as number[]]));
  // The API's own account of the WAIT step (Server-Timing `replicas`), where it has one.
  const waits = new Map(apis.map(({ name }) => [name, [] as number[]]));
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? apis : [...apis].reverse();
    for (const { name, api, headers } of order) {
      for (let i = 0; i < perRound; i++) {
        const t0 = performance.now();
        const reply = await submit(api.url, 'echo', distinctEcho(), { headers });
        if (reply.status !== 202) throw new Error(`latency probe: ${name} answered ${reply.status} ${JSON.stringify(reply.body)}`);
        samples.get(name)!.push(performance.now() - t0);
        const wait = /(?:^|, )replicas;dur=([\d.]+)/.exec(reply.headers.get('server-timing') ?? '')?.[1];
        if (wait) waits.get(name)!.push(Number(wait));
      }
    }
  }
  const stats = (ms: number[]) => {
    const sorted = [...ms].sort((a, b) => a - b);
    return { n: sorted.length, p50: percentile(sorted, 50), p99: percentile(sorted, 99) };
  };
  return new Map([...samples].map(([name, ms]) => [name, { ...stats(ms), wait: waits.get(name)!.length ? stats(waits.get(name)!) : undefined }]));
}

/**
 * Every refusal under a failover is a 503 problem with Retry-After, never a 500 or a hang: a request
 * in the middle of the failover is answered (503 or accepted) within seconds.
 */
export function expectOnly503s(attempts: Attempt[]): void {
  for (const a of attempts.filter((x) => x.status !== 200 && x.status !== 202)) {
    expect(a).toMatchObject({ status: 503, retryAfter: expect.stringMatching(/^\d+$/), contentType: expect.stringMatching(/^application\/problem\+json/) });
  }
  expect(Math.max(...attempts.map((a) => a.ms))).toBeLessThan(15_000);
}
