import { AppEnv, AppProcess, startApp, stackEnv } from '../support/apps';
import { distinctSort, expectOnly503s, SubmitLoad, submitLatency } from '../support/failover';
import { getJob, request, submit } from '../support/http';
import { Ledger } from '../support/ledger';
import { SentinelSet } from '../support/redis-ha';
import { sleep, waitFor } from '../support/wait';

/**
 * Fault 6: the Sentinel-managed primary is killed (SIGKILL) under a steady load. Sentinel promotes a
 * replica; the API, both workers (their BullMQ Workers and blocking reads), QueueEvents, the cancel
 * subscriber and the cache reconnect to it with no restart. The API with REDIS_MIN_REPLICAS_ACK=1
 * answered 202 only for jobs a replica had, so none of them is lost; the API without it shows what a
 * failover can lose (printed, not asserted: it depends on timing).
 */
describe('Redis Sentinel: the primary fails over under load', () => {
  let set: SentinelSet | undefined;
  let apps: AppProcess[] = [];
  let running: SubmitLoad | undefined;

  afterAll(async () => {
    await running?.stop();
    await Promise.all(apps.map((app) => app.stop()));
    await set?.stop();
  });

  it('reconnects everything to the new primary, and loses no job accepted with REDIS_MIN_REPLICAS_ACK=1', async () => {
    set = await SentinelSet.start();
    const env: AppEnv = stackEnv('chaos-sentinel', {
      REDIS_URL: undefined,
      REDIS_SENTINELS: set.sentinelsEnv,
      REDIS_SENTINEL_NAME: set.name,
      REDIS_PASSWORD: set.password,
      WORKER_THREADS: '1',
      // why: a job whose pickup or completion the failover lost is re-run once its lock lapses.
      JOB_LOCK_MS: '5000',
      // The rate limiter's script runs on every request (the limit itself is never reached).
      RATE_LIMIT_PER_MINUTE: '10000000',
    });
    const starting = [
      // why 60 s: four apps starting at once on two shared cores take 10-20 s here to be ready.
      startApp('api', { ...env, REDIS_MIN_REPLICAS_ACK: '1' }, { timeoutMs: 60_000 }),
      startApp('api', env, { timeoutMs: 60_000 }),
      startApp('worker', env, { timeoutMs: 60_000 }),
      startApp('worker', env, { timeoutMs: 60_000 }),
    ];
    const settled = await Promise.allSettled(starting);
    apps = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
    const failed = settled.find((s) => s.status === 'rejected');
    if (failed) throw (failed as PromiseRejectedResult).reason;
    const [durable, plain, ...workers] = apps;

    // What WAIT costs: submit latency of both APIs, side by side, before the fault.
    const latency = await submitLatency([
      { name: 'ack1', api: durable },
      { name: 'ack0', api: plain },
    ]);

    const ledgers = { durable: new Ledger('Sentinel failover, REDIS_MIN_REPLICAS_ACK=1'), plain: new Ledger('Sentinel failover, no REDIS_MIN_REPLICAS_ACK') };
    const load = new SubmitLoad(
      [
        { name: 'durable', api: durable, ledger: ledgers.durable },
        { name: 'plain', api: plain, ledger: ledgers.plain },
      ],
      { lanes: 3, pauseMs: 15, fanOutEvery: 10 },
    );
    running = load;
    load.start();
    await sleep(3000);
    const old = await set.primary();
    // The eviction check runs on whichever node is primary: the replicas may evict, so the promoted
    // one is reported once the apps reach it.
    await Promise.all(set.data.filter((n) => n !== old).map((n) => n.client((c) => c.config('SET', 'maxmemory-policy', 'allkeys-lru'))));
    const killedAt = Date.now();
    load.phase = 'failover';
    await old.kill('SIGKILL');
    const promoted = await set.failedOver(old);
    const failoverMs = Date.now() - killedAt;
    load.phase = 'after';
    const afterAt = Date.now();
    await Promise.all(apps.map((app) => app.ready(30_000)));
    const readyMs = Date.now() - killedAt;
    await sleep(3000);
    await load.stop();


    const durableSummary = await ledgers.durable.check(durable.url, workers, { timeoutMs: 45_000 });
    const plainSummary = await ledgers.plain.check(durable.url, workers, { timeoutMs: 45_000 });

    // Once the load's jobs are done, so nothing queued is ahead of them:
    // reconnected means every connection, on both APIs and the workers: the event streams (Prefer:
    // wait ends on completion), the cancel subscriber (a running job aborts on DELETE) and the cache.
    const probes = [distinctSort(), distinctSort()];
    const waits = await Promise.all(
      [durable, plain].map(async (api, i) => {
        const t0 = Date.now();
        const reply = await submit(api.url, 'sort', probes[i], { wait: 10 });
        return { reply, ms: Date.now() - t0 };
      }),
    );
    const spin = await submit(durable.url, 'chaos', { mode: 'spin', ms: 30_000, tag: `sentinel-${Date.now()}` });
    await waitFor(async () => (await getJob(durable.url, spin.body.id)).body.status === 'active', { what: 'spin active' });
    const cancelled = await request(`${durable.url}/v1/jobs/${spin.body.id}`, { method: 'DELETE' });
    // The other API has never read that result: it comes from the cache Redis, through the new primary.
    const cacheHit = await submit(plain.url, 'sort', probes[0]);
    const extra = (name: 'durable' | 'plain') => ({
      acceptedBefore: load.accepted(name, 'before'),
      acceptedDuringFailover: load.accepted(name, 'failover'),
      acceptedAfter: load.accepted(name, 'after'),
      refusedByCode: load.refusals(name),
      firstAcceptedAfterFailoverMs: load.recoveredAfter(name, afterAt),
    });
    const fmt = (ms: number) => Math.round(ms * 100) / 100;
    ledgers.durable.print(durableSummary, {
      ...extra('durable'),
      failoverMs,
      allReadyAfterKillMs: readyMs,
      primary: `${old.port}->${promoted.port}`,
      slowestMs: load.slowest('durable'),
    });
    ledgers.plain.print(plainSummary, { ...extra('plain'), slowestMs: load.slowest('plain') });
    const [ack1, ack0] = [latency.get('ack1')!, latency.get('ack0')!];
    console.log(
      `[latency] Sentinel, submit (POST → 202), ${ack1.n} per API, side by side: REDIS_MIN_REPLICAS_ACK=1 p50 ${fmt(ack1.p50)} ms p99 ${fmt(ack1.p99)} ms; ` +
        `without p50 ${fmt(ack0.p50)} ms p99 ${fmt(ack0.p99)} ms; p50 ×${fmt(ack1.p50 / ack0.p50)}; ` +
        `the WAIT step itself (Server-Timing replicas) p50 ${fmt(ack1.wait?.p50 ?? NaN)} ms p99 ${fmt(ack1.wait?.p99 ?? NaN)} ms`,
    );

    expect(apps.every((app) => app.alive)).toBe(true);
    // Every 202 of the API with REDIS_MIN_REPLICAS_ACK went through WAIT (and says so in Server-Timing).
    expect(ack1.wait?.n).toBe(ack1.n);
    expect(ack0.wait).toBeUndefined();
    for (const app of apps) {
      const evictionLines = app.logs.filter((l) => l.level >= 50 && String(l.msg).includes('allkeys-lru'));
      expect(evictionLines.map((l) => l.msg)).toContainEqual(expect.stringContaining(`:${promoted.port} has maxmemory-policy "allkeys-lru"`));
    }
    for (const { reply, ms } of waits) {
      expect(reply.body).toMatchObject({ status: 'completed' });
      expect(ms).toBeLessThan(5000);
    }
    expect(cancelled.body).toMatchObject({ status: 'cancelled', error: { code: 'JOB_CANCELLED' } });
    expect(cacheHit.body).toMatchObject({ cached: true });
    expect(load.accepted('durable', 'before')).toBeGreaterThan(0);
    expect(load.accepted('durable', 'after')).toBeGreaterThan(0);
    expect(load.accepted('plain', 'after')).toBeGreaterThan(0);
    expectOnly503s(load.attempts);
    // Nothing hangs: a request in the middle of the failover is answered (503 or accepted) within seconds.
    expect(Math.max(...load.attempts.map((a) => a.ms))).toBeLessThan(15_000);
    expect(durableSummary.problems).toEqual([]);
    expect(durableSummary.lost).toBe(0);
  }, 150_000);
});
