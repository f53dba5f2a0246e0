import { AppProcess, startApp, stackEnv } from '../support/apps';
import { getJob, request, submit } from '../support/http';
import { Ledger } from '../support/ledger';
import { RedisServer } from '../support/redis';
import { sleep, waitFor } from '../support/wait';

interface Attempt {
  phase: 'before' | 'down' | 'after' | 'frozen' | 'thawed';
  ms: number;
  status: number;
  retryAfter: string | null;
  contentType: string | null;
  code?: string;
}

/**
 * Fault 3: Redis (append-only, the test's own) restarts during a steady load. While it is away the
 * API answers 503 with Retry-After at once; both apps reconnect by themselves; every job accepted
 * before or after the outage completes with its result.
 */
describe('Redis restart during a load', () => {
  let redis: RedisServer | undefined;
  let api: AppProcess | undefined;
  let worker: AppProcess | undefined;

  afterAll(async () => {
    redis?.signalProcess('SIGCONT');
    await Promise.all([api?.stop(), worker?.stop()]);
    await redis?.stop();
  });

  it('answers 503 fast while Redis is down, reconnects, and loses no accepted job', async () => {
    redis = await RedisServer.start({ appendonly: true });
    // why JOB_LOCK_MS=10000: longer than the outage, so no lock lapses while Redis is away; and short
    // enough that a job orphaned by a dropped reply (moved to active, never received) is recovered by
    // BullMQ's stalled check well within the settle time (with the 30 s default: up to ~90 s).
    const env = stackEnv('chaos-redis-restart', { REDIS_URL: redis.url, JOB_LOCK_MS: '10000' });
    [api, worker] = await Promise.all([startApp('api', env), startApp('worker', env)]);
    const ledger = new Ledger('Redis restart');
    const attempts: Attempt[] = [];
    let phase: Attempt['phase'] = 'before';
    const t00 = Date.now();
    const phaseAt: Record<string, number> = { before: 0 };
    let stop = false;
    let n = 1_000_000;

    // Four clients submitting distinct jobs, each pausing a little between requests.
    const lane = async () => {
      while (!stop) {
        const input = { n: n++ };
        const current = phase;
        const t0 = Date.now();
        const reply = await ledger.submit(api!.url, 'echo', input);
        attempts.push({
          phase: current,
          ms: Date.now() - t0,
          status: reply.status,
          retryAfter: reply.headers.get('retry-after'),
          contentType: reply.headers.get('content-type'),
          code: reply.body?.code,
        });
        await sleep(50);
      }
    };
    const lanes = Promise.all([lane(), lane(), lane(), lane()]);

    await sleep(1500);
    await redis.stopProcess();
    phase = 'down';
    phaseAt.down = Date.now() - t00;
    await sleep(3000);
    const apiReadyWhileDown = (await fetch(`${api.url}/health/ready`)).status;
    const workerReadyWhileDown = (await fetch(`${worker.url}/health/ready`)).status;
    await redis.startProcess();
    phase = 'after';
    phaseAt.after = Date.now() - t00;
    const t0 = Date.now();
    await Promise.all([api.ready(15_000), worker.ready(15_000)]);
    const reconnectMs = Date.now() - t0;
    await sleep(1500);
    // A Redis that accepts connections but never answers (frozen, overloaded, partitioned): the API
    // still answers within its own command timeout.
    redis.signalProcess('SIGSTOP');
    phase = 'frozen';
    phaseAt.frozen = Date.now() - t00;
    await sleep(3000);
    redis.signalProcess('SIGCONT');
    phase = 'thawed';
    phaseAt.thawed = Date.now() - t00;
    await Promise.all([api.ready(15_000), worker.ready(15_000)]);
    await sleep(1000);
    stop = true;
    await lanes;

    // Reconnected means every connection: the API's event stream (Prefer: wait returns on completion,
    // not at its timeout) and the worker's cancel subscription (a running job aborts on DELETE).
    const w0 = Date.now();
    const waited = await ledger.submit(api.url, 'fibonacci', { n: 27 }, { wait: 10 });
    const waitMs = Date.now() - w0;
    expect(waited.status).toBe(200);
    expect(waited.body).toMatchObject({ status: 'completed', result: 196418 });
    expect(waitMs).toBeLessThan(5000);
    const spin = await submit(api.url, 'chaos', { mode: 'sleep', ms: 30_000, tag: `after-restart-${Date.now()}` });
    await waitFor(async () => (await getJob(api!.url, spin.body.id)).body.status === 'active', { what: 'spin active' });
    const cancelled = await request(`${api.url}/v1/jobs/${spin.body.id}`, { method: 'DELETE' });
    expect(cancelled.body).toMatchObject({ status: 'cancelled', error: { code: 'JOB_CANCELLED' } });

    const summary = await ledger.check(api.url, [worker], { timeoutMs: 60_000 });
    const by = (p: Attempt['phase']) => attempts.filter((a) => a.phase === p);
    const accepted = (p: Attempt['phase']) => by(p).filter((a) => a.status === 202 || a.status === 200).length;
    const refused = attempts.filter((a) => a.status !== 202 && a.status !== 200);
    const slowest = Math.max(...attempts.map((a) => a.ms));
    ledger.print(summary, {
      acceptedBefore: accepted('before'),
      acceptedWhileDown: accepted('down'),
      acceptedAfter: accepted('after'),
      answeredWhileFrozen: by('frozen').map((a) => a.status).join('/'),
      acceptedThawed: accepted('thawed'),
      answered503: refused.filter((a) => a.status === 503).length,
      slowestRequestMs: slowest,
      reconnectMs,
      preferWaitAfterRestartMs: waitMs,
      loadStartedAt: new Date(t00).toISOString(),
      phasesStartMs: phaseAt,
    });

    expect(apiReadyWhileDown).toBe(503);
    expect(workerReadyWhileDown).toBe(503);
    expect(accepted('before')).toBeGreaterThan(0);
    expect(accepted('after')).toBeGreaterThan(0);
    expect(accepted('thawed')).toBeGreaterThan(0);
    expect(by('down').filter((a) => a.status === 503).length).toBeGreaterThan(0);
    // Every refusal is a 503 problem with Retry-After, never another error.
    for (const a of refused) expect(a).toMatchObject({ status: 503, retryAfter: expect.stringMatching(/^\d+$/), contentType: expect.stringMatching(/^application\/problem\+json/) });
    // The API never hangs on a missing or frozen Redis: its Redis commands time out after 2 s.
    expect(slowest).toBeLessThan(5000);
    expect(summary.problems).toEqual([]);
    expect(summary.lost).toBe(0);
    expect(summary.duplicates).toBe(0);
    expect([...api.logs, ...worker.logs].filter((l) => l.level >= 50)).toEqual([]);
  }, 120_000);
});
