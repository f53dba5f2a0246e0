import { randomBytes } from 'node:crypto';
import { AppEnv, AppProcess, startAll, startApp, stackEnv } from './apps';
import { distinctEcho, expectOnly503s, type LatencyStats, SubmitLoad, submitLatency } from './failover';
import { getJob, type Reply, request, submit } from './http';
import { Ledger, type Summary } from './ledger';
import type { RedisNode } from './redis-ha';
import { stallReport } from './stall-report';
import { waitFor } from './wait';

/** What a stack checked once its failover and load were over. */
export interface FailoverOutcome {
  durable: Summary;
  plain: Summary;
  /** A `Prefer: wait` submission to each API, and how long it took. */
  waits: Array<{ reply: Reply; ms: number }>;
  /** A running job cancelled through the API. */
  cancelled: Reply;
  /** A result read through the other API, which has never seen it: from the cache Redis. */
  cacheHit: Reply;
}

const fmt = (ms: number) => Math.round(ms * 100) / 100;

/**
 * The API key of each API's callers: with keys, every job has an owner record, and each ledger
 * reads its jobs back with its owner's key, so an owner record a failover lost shows as a lost job.
 */
const KEYS = { durable: randomBytes(24).toString('hex'), plain: randomBytes(24).toString('hex') };

/**
 * The failover tests' stack on a highly available Redis (Sentinel or Cluster): two APIs side by side,
 * `durable` with REDIS_MIN_REPLICAS_ACK=1 and `plain` without, each with callers of their own API key,
 * two workers, a ledger per API, and what every failover test checks once its load is over.
 */
export class FailoverStack {
  readonly ledgers: { durable: Ledger; plain: Ledger };
  private latency?: Map<string, LatencyStats>;

  private constructor(
    readonly kind: 'Sentinel' | 'Cluster',
    readonly durable: AppProcess,
    readonly plain: AppProcess,
    readonly workers: AppProcess[],
  ) {
    this.ledgers = {
      durable: new Ledger(`${kind} failover, REDIS_MIN_REPLICAS_ACK=1`, FailoverStack.as('durable')),
      plain: new Ledger(`${kind} failover, no REDIS_MIN_REPLICAS_ACK`, FailoverStack.as('plain')),
    };
  }

  /** The headers of the callers of API `name`: their API key. */
  static as(name: keyof typeof KEYS): Record<string, string> {
    return { 'x-api-key': KEYS[name] };
  }

  /** The apps' env on the Redis that `redis` (REDIS_SENTINELS… or REDIS_CLUSTER_NODES…) names. */
  static env(kind: 'Sentinel' | 'Cluster', redis: AppEnv): AppEnv {
    return stackEnv(`chaos-${kind.toLowerCase()}`, {
      REDIS_URL: undefined,
      ...redis,
      WORKER_THREADS: '1',
      // why: a job whose pickup or completion the failover lost is re-run once its lock lapses.
      JOB_LOCK_MS: '5000',
      // The rate limiter's script runs on every request (the limit itself is never reached).
      RATE_LIMIT_PER_MINUTE: '10000000',
      API_KEYS: `durable=${KEYS.durable},plain=${KEYS.plain}`,
    });
  }

  /** Starts the four apps with `env` (see `env`); if one fails to start, the others are stopped. */
  static async start(kind: 'Sentinel' | 'Cluster', env: AppEnv): Promise<FailoverStack> {
    // why 60 s: four apps starting at once on two shared cores take 10-20 s here to be ready.
    const opts = { timeoutMs: 60_000 };
    const [durable, plain, ...workers] = await startAll([
      startApp('api', { ...env, REDIS_MIN_REPLICAS_ACK: '1' }, opts),
      startApp('api', env, opts),
      startApp('worker', env, opts),
      startApp('worker', env, opts),
    ]);
    return new FailoverStack(kind, durable, plain, workers);
  }

  get apps(): AppProcess[] {
    return [this.durable, this.plain, ...this.workers];
  }

  /** What WAIT costs: submit latency of both APIs, side by side, before the fault. */
  async measureLatency(): Promise<void> {
    this.latency = await submitLatency([
      { name: 'ack1', api: this.durable, headers: FailoverStack.as('durable') },
      { name: 'ack0', api: this.plain, headers: FailoverStack.as('plain') },
    ]);
  }

  /** Steady submissions to both APIs, each recorded in its API's ledger. */
  load(fanOutEvery: number): SubmitLoad {
    return new SubmitLoad(
      [
        { name: 'durable', api: this.durable, ledger: this.ledgers.durable },
        { name: 'plain', api: this.plain, ledger: this.ledgers.plain },
      ],
      { lanes: 3, pauseMs: 15, fanOutEvery },
    );
  }

  /**
   * Once the load is over (so nothing queued is ahead of the probes): settles both ledgers (through
   * the durable API, each job read with its owner's key), then checks that every connection of every app reconnected: the event streams (Prefer: wait ends on
   * completion), the cancel subscriber (a running job aborts on DELETE) and the cache.
   */
  async afterFailover(): Promise<FailoverOutcome> {
    const { durable, plain, workers } = this;
    const [durableSummary, plainSummary] = await Promise.all([
      this.ledgers.durable.check(durable.url, workers, { timeoutMs: 45_000 }),
      this.ledgers.plain.check(durable.url, workers, { timeoutMs: 45_000 }),
    ]);
    const probes = [distinctEcho(), distinctEcho()];
    const waits = await Promise.all(
      (['durable', 'plain'] as const).map(async (name, i) => {
        const t0 = Date.now();
        const reply = await submit(this[name].url, 'echo', probes[i], { wait: 10, headers: FailoverStack.as(name) });
        return { reply, ms: Date.now() - t0 };
      }),
    );
    const as = FailoverStack.as('durable');
    const spin = await submit(durable.url, 'chaos', { mode: 'spin', ms: 30_000, tag: `${this.kind}-${Date.now()}` }, { headers: as });
    if (spin.status !== 202) throw new Error(`the cancel probe was not accepted: ${spin.status} ${JSON.stringify(spin.body)}`);
    await waitFor(async () => (await getJob(durable.url, spin.body.id, as)).body.status === 'active', { what: 'spin active' }).catch(async (error: unknown) => {
      console.log(await stallReport(this.apps));
      throw error;
    });
    const cancelled = await request(`${durable.url}/v1/jobs/${spin.body.id}`, { method: 'DELETE', headers: as });
    const cacheHit = await submit(plain.url, 'echo', probes[0], { headers: FailoverStack.as('plain') });
    return { durable: durableSummary, plain: plainSummary, waits, cancelled, cacheHit };
  }

  /** Prints both ledgers (with what `load` saw of each API, and `extra`) and the latency line. */
  print(outcome: FailoverOutcome, load: SubmitLoad, extra: { durable?: Record<string, unknown>; plain?: Record<string, unknown> } = {}): void {
    for (const name of ['durable', 'plain'] as const) {
      this.ledgers[name].print(outcome[name], {
        acceptedByPhase: load.acceptedByPhase(name),
        refusedByCode: load.refusals(name),
        ...extra[name],
        slowestMs: load.slowest(name),
      });
    }
    const [ack1, ack0] = [this.latency!.get('ack1')!, this.latency!.get('ack0')!];
    console.log(
      `[latency] ${this.kind}, submit (POST → 202), ${ack1.n} per API, side by side: REDIS_MIN_REPLICAS_ACK=1 p50 ${fmt(ack1.p50)} ms p99 ${fmt(ack1.p99)} ms; ` +
        `without p50 ${fmt(ack0.p50)} ms p99 ${fmt(ack0.p99)} ms; p50 ×${fmt(ack1.p50 / ack0.p50)}; ` +
        `the WAIT step itself (Server-Timing replicas) p50 ${fmt(ack1.wait?.p50 ?? NaN)} ms p99 ${fmt(ack1.wait?.p99 ?? NaN)} ms`,
    );
  }

  /**
   * What every failover must leave: all apps alive and reconnected (to `promoted`, whose eviction
   * policy each one reported), every refusal a quick 503, every 202 of the durable API through WAIT,
   * and none of its jobs lost.
   */
  expectRecovered(outcome: FailoverOutcome, load: SubmitLoad, promoted: RedisNode): void {
    const [ack1, ack0] = [this.latency!.get('ack1')!, this.latency!.get('ack0')!];
    expect(this.apps.every((app) => app.alive)).toBe(true);
    // Every 202 of the API with REDIS_MIN_REPLICAS_ACK went through WAIT (and says so in Server-Timing).
    expect(ack1.wait?.n).toBe(ack1.n);
    expect(ack0.wait).toBeUndefined();
    for (const app of this.apps) {
      const evictionLines = app.logs.filter((l) => l.level >= 50 && String(l.msg).includes('allkeys-lru'));
      expect(evictionLines.map((l) => l.msg)).toContainEqual(expect.stringContaining(`:${promoted.port} has maxmemory-policy "allkeys-lru"`));
    }
    for (const { reply, ms } of outcome.waits) {
      expect(reply.body).toMatchObject({ status: 'completed' });
      expect(ms).toBeLessThan(5000);
    }
    expect(outcome.cancelled.body).toMatchObject({ status: 'cancelled', error: { code: 'JOB_CANCELLED' } });
    expect(outcome.cacheHit.body).toMatchObject({ cached: true });
    expectOnly503s(load.attempts);
    expect(outcome.durable.problems).toEqual([]);
    expect(outcome.durable.lost).toBe(0);
  }

  async stop(): Promise<void> {
    await Promise.all(this.apps.map((app) => app.stop()));
  }
}
