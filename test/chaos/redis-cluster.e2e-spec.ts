import { randomBytes } from 'node:crypto';
import { bullKey, callerShares } from '@app/queue';
import { distinctEcho, SubmitLoad } from '../support/failover';
import { FailoverStack } from '../support/failover-stack';
import { request, submit } from '../support/http';
import { RedisClusterSet } from '../support/redis-ha';
import { waitFor } from '../support/wait';

/**
 * Fault 7: on a Redis Cluster of three primaries with a replica each, the primary owning the
 * `default` queue's hash slot is killed (SIGKILL) under a steady load of `default` jobs and `heavy`
 * fan-out jobs. Its replica takes over; the apps follow the new slot map with no restart, and the
 * other shards keep serving meanwhile. Single flight, cancel markers and channel, rate limits,
 * the job notices, flows, the job store, the cache and fair share (each API key's share in its
 * queue's slot) all work across shards, and so do dead letters (kept, listed and replayed once,
 * in their queue's slot). The API with REDIS_MIN_REPLICAS_ACK=1 loses no accepted job; the one
 * without shows what a failover can lose.
 */
describe('Redis Cluster: the primary of the default queue fails over under load', () => {
  let cluster: RedisClusterSet | undefined;
  let stack: FailoverStack | undefined;
  let running: SubmitLoad | undefined;

  afterAll(async () => {
    await running?.stop();
    await stack?.stop();
    await cluster?.stop();
  });

  it('follows the failover, keeps the other shards serving, and loses no job accepted with REDIS_MIN_REPLICAS_ACK=1', async () => {
    cluster = await RedisClusterSet.start();
    const adminKey = randomBytes(32).toString('hex');
    const env = FailoverStack.env('Cluster', { REDIS_CLUSTER_NODES: cluster.seedsEnv, REDIS_PASSWORD: cluster.password, ADMIN_API_KEYS: `ops=${adminKey}` });
    const admin = { 'x-api-key': adminKey };
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
    stack = await FailoverStack.start('Cluster', env);
    const { durable, plain } = stack;
    await stack.measureLatency();

    // Single flight across replicas and shards: identical submissions to both APIs join one job
    // (one that runs long enough for all four to arrive while it is queued or running).
    const same = { mode: 'spin', ms: 1500, tag: `cluster-join-${Date.now()}` };
    // Meanwhile a job that fails for good (2 attempts), kept as a dead letter before the fault.
    const [failedForGood, ...joined] = await Promise.all([
      submit(durable.url, 'chaos', { mode: 'throw', tag: `cluster-dead-${Date.now()}` }, { wait: 20, headers: FailoverStack.as('durable') }),
      ...(['durable', 'plain', 'durable', 'plain'] as const).map((name) => submit(stack![name].url, 'chaos', same, { headers: FailoverStack.as(name) })),
    ]);

    const load = stack.load(5);
    running = load;
    load.start();
    await load.acceptedInPhase(100);
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
        const reply = await submit(durable.url, 'echo', distinctEcho(), { headers: FailoverStack.as('durable') });
        lastReply = { status: reply.status, body: reply.body };
        return reply.body?.code === 'NOT_REPLICATED' ? reply : undefined;
      },
      { timeoutMs: 15_000, intervalMs: 200, what: '503 NOT_REPLICATED for the default queue' },
    ).catch((error: Error) => {
      throw new Error(`${error.message}; last reply ${JSON.stringify(lastReply)}`);
    });
    const heavyMeanwhile = await submit(durable.url, 'spin', { tag: `cluster-heavy-${Date.now()}` }, { headers: { ...FailoverStack.as('durable'), 'job-tags': 'cluster-heavy' } });
    // WAIT blocks only the submissions' own connection: reads and readiness are not held up by it.
    const readyWhileUnreplicated = (await fetch(`${durable.url}/health/ready`)).status;
    await old.start();
    await cluster.settled();
    load.phase = 'rejoined';
    const rejoinedAt = Date.now();
    await Promise.all(stack.apps.map((app) => app.ready(30_000)));
    await load.acceptedInPhase(100);
    await load.stop();

    // The listing indexes live in each queue's hash slot: a caller's list merges both shards'
    // (the `heavy` job, the `default` job all four submissions joined), and its tag's index finds its job.
    const listed = async (query: string) => ((await request(`${durable.url}/v1/jobs?${query}`, { headers: FailoverStack.as('durable') })).body as { items: Array<{ id: string }> }).items.map((item) => item.id);
    const [spins, chaos, tagged] = await Promise.all([listed('type=spin&limit=100'), listed('type=chaos&limit=100'), listed('tag=cluster-heavy')]);

    // Dead letters live in their queue's slot too: the one kept before the fault is listed and replayed once.
    const letters = (await request(`${plain.url}/admin/dead-letters?type=chaos&code=JOB_FAILED`, { headers: admin })).body as { items: Array<{ id: string }> };
    const replayFilter = { type: 'chaos', code: 'JOB_FAILED', until: new Date().toISOString() };
    const replays: Array<{ replayed: number; originals: string[] }> = [];
    for (let i = 0; i < 2; i++) replays.push((await request(`${durable.url}/admin/dead-letters/replay`, { method: 'POST', json: replayFilter, headers: admin })).body);

    const outcome = await stack.afterFailover();
    // Fair share on the cluster (both APIs have keys): once the load has drained, each key's running
    // and waiting counts in each queue's shard are back to 0, the failed-over one's included.
    const shares = (queue: string) => cluster!.primaryFor(bullKey(prefix, queue, 'wait')).then((node) => node.client((c) => callerShares(c, prefix, queue)));
    let drained: Array<{ queue: string; caller: string; waiting: number; running: number }> = [];
    await waitFor(
      async () => {
        drained = (await Promise.all(['default', 'heavy'].map(async (queue) => (await shares(queue)).map((share) => ({ queue, ...share }))))).flat();
        return drained.every((share) => share.waiting === 0 && share.running === 0);
      },
      { timeoutMs: 30_000, what: "every key's fair-share counts back to 0" },
    ).catch((error: Error) => {
      throw new Error(`${error.message}: ${JSON.stringify(drained)}`);
    });
    stack.print(outcome, load, {
      durable: {
        failoverMs,
        firstAcceptedAfterFailoverMs: load.recoveredAfter('durable', afterAt),
        firstAcceptedAfterRejoinMs: load.recoveredAfter('durable', rejoinedAt),
        defaultPrimary: `${old.port}->${promoted.port}`,
        heavyPrimary: `${heavyPrimary.port} (untouched)`,
      },
      plain: { firstAcceptedAfterFailoverMs: load.recoveredAfter('plain', afterAt), firstAcceptedAfterRejoinMs: load.recoveredAfter('plain', rejoinedAt) },
    });

    expect(new Set(joined.map((r) => r.body.id)).size).toBe(1);
    expect(failedForGood.body).toMatchObject({ status: 'failed', error: { code: 'JOB_FAILED' } });
    expect(letters.items.map((item) => item.id)).toContain(failedForGood.body.id);
    expect(replays).toMatchObject([{ replayed: 1, originals: [failedForGood.body.id] }, { replayed: 0, originals: [] }]);
    expect(drained.filter((share) => share.queue === 'default').map((share) => share.caller).sort()).toEqual(['durable', 'plain']);
    expect(drained.filter((share) => share.queue === 'heavy').map((share) => share.caller)).toContain('durable');
    expect(heavyPrimary).not.toBe(old);
    expect(unreplicated).toMatchObject({ status: 503, headers: expect.anything(), body: { code: 'NOT_REPLICATED' } });
    expect(unreplicated.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(heavyMeanwhile.status).toBe(202);
    expect(spins).toContain(heavyMeanwhile.body.id);
    expect(chaos).toContain(joined[0].body.id);
    expect(tagged).toEqual([heavyMeanwhile.body.id]);
    // The sweep of ended jobs runs its script on the cluster: it failed only once the primary was
    // killed, and each replica that failed swept again once the cluster had settled.
    for (const app of stack.apps) {
      const failed = app.logs.filter((l) => String(l.msg).startsWith('could not sweep'));
      expect(failed.filter((l) => Number(l.time) < killedAt)).toEqual([]);
      if (failed.length > 0) expect(app.logs.some((l) => l.msg === 'the listing index is swept again' && Number(l.time) > Number(failed[0].time))).toBe(true);
    }
    expect(readyWhileUnreplicated).toBe(200);
    stack.expectRecovered(outcome, load, promoted);
    expect(load.accepted('durable', 'before')).toBeGreaterThan(0);
    expect(load.accepted('durable', 'rejoined')).toBeGreaterThan(0);
    expect(load.accepted('plain', 'after')).toBeGreaterThan(0);
    // The rate limiter's script ran on the cluster without failing open (it logs when it does) before the fault.
    const limiterDown = [durable, plain].flatMap((api) => api.logs.filter((l) => String(l.msg).startsWith('rate limiter unavailable') && Number(l.time) < killedAt));
    expect(limiterDown).toEqual([]);
  }, 150_000);
});
