import { bullKey } from '@app/queue';
import { AppEnv, AppProcess, startApp, stackEnv } from '../support/apps';
import { distinctSort, expectOnly503s, SubmitLoad, submitLatency } from '../support/failover';
import { getJob, request, submit } from '../support/http';
import { Ledger } from '../support/ledger';
import { RedisClusterSet } from '../support/redis-ha';
import { sleep, waitFor } from '../support/wait';

/**
 * Fault 7: on a Redis Cluster of three primaries with a replica each, the primary owning the
 * `default` queue's hash slot is killed (SIGKILL) under a steady load of `default` jobs and `heavy`
 * fan-out jobs. Its replica takes over; the apps follow the new slot map with no restart, and the
 * other shards keep serving meanwhile. Single flight, cancel markers and channel, rate limits,
 * QueueEvents, flows, the job store and the cache all work across shards. The API with
 * REDIS_MIN_REPLICAS_ACK=1 loses no accepted job; the one without shows what a failover can lose.
 */
describe('Redis Cluster: the primary of the default queue fails over under load', () => {
  let cluster: RedisClusterSet | undefined;
  let apps: AppProcess[] = [];
  let running: SubmitLoad | undefined;

  afterAll(async () => {
    await running?.stop();
    await Promise.all(apps.map((app) => app.stop()));
    await cluster?.stop();
  });

  it('follows the failover, keeps the other shards serving, and loses no job accepted with REDIS_MIN_REPLICAS_ACK=1', async () => {
    cluster = await RedisClusterSet.start();
    const env: AppEnv = stackEnv('chaos-cluster', {
      REDIS_URL: undefined,
      REDIS_CLUSTER_NODES: cluster.seedsEnv,
      REDIS_PASSWORD: cluster.password,
      WORKER_THREADS: '1',
      // why: a job whose pickup or completion the failover lost is re-run once its lock lapses.
      JOB_LOCK_MS: '5000',
      // The rate limiter's script runs on every request (the limit itself is never reached).
      RATE_LIMIT_PER_MINUTE: '10000000',
    });
    const prefix = env.REDIS_PREFIX!;
    const defaultKey = bullKey(prefix, 'default', 'wait');
    const heavyKey = bullKey(prefix, 'heavy', 'wait');
    // `default` (slot 5718) and `heavy` (8060) share a shard in an evenly split 3-shard cluster; move
    // `heavy` to another one, as an operator would, so the fault hits one queue and not the other.
    const defaultShard = await cluster.primaryFor(defaultKey);
    if ((await cluster.primaryFor(heavyKey)) === defaultShard) {
      const other = (await cluster.primaries()).find((p) => p.node !== defaultShard)!.node;
      await cluster.moveSlot(heavyKey, other);
    }
    const settled = await Promise.allSettled([
      // why 60 s: four apps starting at once on two shared cores take 10-20 s here to be ready.
      startApp('api', { ...env, REDIS_MIN_REPLICAS_ACK: '1' }, { timeoutMs: 60_000 }),
      startApp('api', env, { timeoutMs: 60_000 }),
      startApp('worker', env, { timeoutMs: 60_000 }),
      startApp('worker', env, { timeoutMs: 60_000 }),
    ]);
    apps = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
    const failed = settled.find((s) => s.status === 'rejected');
    if (failed) throw (failed as PromiseRejectedResult).reason;
    const [durable, plain, ...workers] = apps;

    const latency = await submitLatency([
      { name: 'ack1', api: durable },
      { name: 'ack0', api: plain },
    ]);

    // Single flight across replicas and shards: identical submissions to both APIs join one job
    // (one that runs long enough for all four to arrive while it is queued or running).
    const same = { mode: 'spin', ms: 1500, tag: `cluster-join-${Date.now()}` };
    const joined = await Promise.all([durable, plain, durable, plain].map((api) => submit(api.url, 'chaos', same)));

    const ledgers = { durable: new Ledger('Cluster failover, REDIS_MIN_REPLICAS_ACK=1'), plain: new Ledger('Cluster failover, no REDIS_MIN_REPLICAS_ACK') };
    const load = new SubmitLoad(
      [
        { name: 'durable', api: durable, ledger: ledgers.durable },
        { name: 'plain', api: plain, ledger: ledgers.plain },
      ],
      { lanes: 3, pauseMs: 15, fanOutEvery: 5 },
    );
    running = load;
    load.start();
    await sleep(3000);
    const old = await cluster.primaryFor(defaultKey);
    const heavyPrimary = await cluster.primaryFor(heavyKey);
    // The eviction check runs per node: the replica that takes over may evict, and is reported once
    // the apps connect to it as a primary.
    await (await cluster.replicaOf(old)).client((c) => c.config('SET', 'maxmemory-policy', 'allkeys-lru'));
    const killedAt = Date.now();
    load.phase = 'failover';
    await old.kill('SIGKILL');
    const promoted = await cluster.failedOver(defaultKey, old);
    const failoverMs = Date.now() - killedAt;
    load.phase = 'after';
    const afterAt = Date.now();
    // The new primary has no replica until the old one comes back as its replica: until then the
    // API with REDIS_MIN_REPLICAS_ACK=1 refuses `default` jobs with 503 NOT_REPLICATED (once it has
    // the new slot map), while `heavy`, on a shard with its replica, is accepted as usual.
    let lastReply: unknown;
    const unreplicated = await waitFor(
      async () => {
        const reply = await submit(durable.url, 'sort', distinctSort());
        lastReply = { status: reply.status, body: reply.body };
        return reply.body?.code === 'NOT_REPLICATED' ? reply : undefined;
      },
      { timeoutMs: 15_000, intervalMs: 200, what: '503 NOT_REPLICATED for the default queue' },
    ).catch((error: Error) => {
      throw new Error(`${error.message}; last reply ${JSON.stringify(lastReply)}`);
    });
    const heavyMeanwhile = await submit(durable.url, 'sum', { n: 1000 + (Date.now() % 1000) });
    // WAIT blocks only the submissions' own connection: reads and readiness are not held up by it.
    const readyWhileUnreplicated = (await fetch(`${durable.url}/health/ready`)).status;
    await old.start();
    await cluster.settled();
    load.phase = 'rejoined';
    const rejoinedAt = Date.now();
    await Promise.all(apps.map((app) => app.ready(30_000)));
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
    const spin = await submit(durable.url, 'chaos', { mode: 'spin', ms: 30_000, tag: `cluster-${Date.now()}` });
    await waitFor(async () => (await getJob(durable.url, spin.body.id)).body.status === 'active', { what: 'spin active' });
    const cancelled = await request(`${durable.url}/v1/jobs/${spin.body.id}`, { method: 'DELETE' });
    const cacheHit = await submit(plain.url, 'sort', probes[0]);
    const extra = (name: 'durable' | 'plain') => ({
      acceptedBefore: load.accepted(name, 'before'),
      acceptedDuringFailover: load.accepted(name, 'failover'),
      acceptedAfterFailover: load.accepted(name, 'after'),
      acceptedAfterRejoin: load.accepted(name, 'rejoined'),
      refusedByCode: load.refusals(name),
      firstAcceptedAfterFailoverMs: load.recoveredAfter(name, afterAt),
      firstAcceptedAfterRejoinMs: load.recoveredAfter(name, rejoinedAt),
    });
    const fmt = (ms: number) => Math.round(ms * 100) / 100;
    ledgers.durable.print(durableSummary, {
      ...extra('durable'),
      failoverMs,
      defaultPrimary: `${old.port}->${promoted.port}`,
      heavyPrimary: `${heavyPrimary.port} (untouched)`,
      slowestMs: load.slowest('durable'),
    });
    ledgers.plain.print(plainSummary, { ...extra('plain'), slowestMs: load.slowest('plain') });
    const [ack1, ack0] = [latency.get('ack1')!, latency.get('ack0')!];
    console.log(
      `[latency] Cluster, submit (POST → 202), ${ack1.n} per API, side by side: REDIS_MIN_REPLICAS_ACK=1 p50 ${fmt(ack1.p50)} ms p99 ${fmt(ack1.p99)} ms; ` +
        `without p50 ${fmt(ack0.p50)} ms p99 ${fmt(ack0.p99)} ms; p50 ×${fmt(ack1.p50 / ack0.p50)}; ` +
        `the WAIT step itself (Server-Timing replicas) p50 ${fmt(ack1.wait?.p50 ?? NaN)} ms p99 ${fmt(ack1.wait?.p99 ?? NaN)} ms`,
    );

    expect(new Set(joined.map((r) => r.body.id)).size).toBe(1);
    expect(heavyPrimary).not.toBe(old);
    expect(unreplicated).toMatchObject({ status: 503, headers: expect.anything(), body: { code: 'NOT_REPLICATED' } });
    expect(unreplicated.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(heavyMeanwhile.status).toBe(202);
    expect(readyWhileUnreplicated).toBe(200);
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
    expect(load.accepted('durable', 'rejoined')).toBeGreaterThan(0);
    expect(load.accepted('plain', 'after')).toBeGreaterThan(0);
    expectOnly503s(load.attempts);
    // Nothing hangs: a request in the middle of the failover is answered (503 or accepted) within seconds.
    expect(Math.max(...load.attempts.map((a) => a.ms))).toBeLessThan(15_000);
    expect(durableSummary.problems).toEqual([]);
    expect(durableSummary.lost).toBe(0);
    // The rate limiter's script ran on the cluster without failing open (it logs when it does) before the fault.
    const limiterDown = [durable, plain].flatMap((api) => api.logs.filter((l) => String(l.msg).startsWith('rate limiter unavailable') && Number(l.time) < killedAt));
    expect(limiterDown).toEqual([]);
  }, 150_000);
});
