import type { SubmitLoad } from '../support/failover';
import { FailoverStack } from '../support/failover-stack';
import { SentinelSet } from '../support/redis-ha';
import { waitFor } from '../support/wait';

/**
 * Fault 6: the Sentinel-managed primary is killed (SIGKILL) under a steady load, with its replicas
 * cut off for the last second or so before (as a partition, or a replica far behind, would), so
 * the replica Sentinel promotes lacks what the primary wrote meanwhile. The API, both workers
 * (their BullMQ Workers and blocking reads), the notice subscription, the cancel subscriber and the cache
 * reconnect to it with no restart. The API with REDIS_MIN_REPLICAS_ACK=1 answered 503
 * NOT_REPLICATED while no replica confirmed, so none of its 202s is lost, each read back with its
 * owner's API key (the owner record is as durable as the job); the API without it answered 202 and
 * lost those jobs.
 */
describe('Redis Sentinel: the primary fails over under load', () => {
  let set: SentinelSet | undefined;
  let stack: FailoverStack | undefined;
  let running: SubmitLoad | undefined;

  afterAll(async () => {
    await running?.stop();
    await stack?.stop();
    await set?.stop();
  });

  it('reconnects everything to a promoted replica that missed the last writes; only REDIS_MIN_REPLICAS_ACK=1 loses no accepted job', async () => {
    set = await SentinelSet.start();
    stack = await FailoverStack.start(
      'Sentinel',
      FailoverStack.env('Sentinel', { REDIS_SENTINELS: set.sentinelsEnv, REDIS_SENTINEL_NAME: set.name, REDIS_PASSWORD: set.password }),
    );
    await stack.measureLatency();

    const load = stack.load(10);
    running = load;
    load.start();
    await load.acceptedInPhase(100);
    const old = await set.primary();
    // The eviction check runs on whichever node is primary: the replicas may evict, so the promoted
    // one is reported once the apps reach it.
    await Promise.all(set.data.filter((n) => n !== old).map((n) => n.client((c) => c.config('SET', 'maxmemory-policy', 'allkeys-lru'))));
    const cut = await set.cutReplicas(old);
    load.phase = 'lagging';
    // From here the primary alone has what it is sent: the plain API answers 202 all the same, the
    // durable one waits for a replica and, after its 1 s WAIT, answers 503 NOT_REPLICATED.
    await waitFor(() => load.attempts.some((a) => a.target === 'durable' && a.code === 'NOT_REPLICATED'), {
      timeoutMs: 15_000,
      what: 'a 503 NOT_REPLICATED while the replicas are cut off',
    });
    const lagBytes = await set.replicationLag(old);
    const killedAt = Date.now();
    load.phase = 'failover';
    await old.kill('SIGKILL');
    await cut.reconnect();
    const promoted = await set.failedOver(old);
    const failoverMs = Date.now() - killedAt;
    load.phase = 'after';
    const afterAt = Date.now();
    await Promise.all(stack.apps.map((app) => app.ready(30_000)));
    const readyMs = Date.now() - killedAt;
    await load.acceptedInPhase(100);
    await load.stop();

    const outcome = await stack.afterFailover();
    stack.print(outcome, load, {
      durable: {
        replicasBehindAtKillBytes: lagBytes,
        failoverMs,
        allReadyAfterKillMs: readyMs,
        firstAcceptedAfterFailoverMs: load.recoveredAfter('durable', afterAt),
        primary: `${old.port}->${promoted.port}`,
      },
      plain: { firstAcceptedAfterFailoverMs: load.recoveredAfter('plain', afterAt) },
    });

    if (outcome.durable.lost > 0) {
      // Evidence for a job the durable API accepted and lost: when it was accepted, and what Redis and the Sentinels did.
      const lost = outcome.durable.problems.map((p) => load.attempts.find((a) => a.id === p.id)).map((a) => a && { id: a.id, phase: a.phase, msAfterKill: a.at - killedAt, ms: a.ms });
      console.log(`[sentinel] durable jobs lost: ${JSON.stringify(lost)}\n${[...set.data, ...set.sentinels].map((n) => `${n.address}:\n${n.logTail(40)}`).join('\n')}`);
    }
    stack.expectRecovered(outcome, load, promoted);
    expect(load.accepted('durable', 'before')).toBeGreaterThan(0);
    expect(load.accepted('durable', 'after')).toBeGreaterThan(0);
    expect(load.accepted('plain', 'after')).toBeGreaterThan(0);
    // What the promoted replica never had: the plain API's 202s since the cut are gone (the API
    // answers 404 for them), while the durable API refused what no replica confirmed.
    expect(lagBytes).toBeGreaterThan(0);
    expect(load.accepted('plain', 'lagging')).toBeGreaterThan(0);
    expect(outcome.plain.lost).toBeGreaterThan(0);
    expect(outcome.plain.problems.map((p) => p.verdict)).toEqual(outcome.plain.problems.map(() => 'not-found'));
    expect(load.refusals('durable')['503 NOT_REPLICATED']).toBeGreaterThan(0);
  }, 150_000);
});
