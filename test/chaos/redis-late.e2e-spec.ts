import { AppProcess, startApp, stackEnv } from '../support/apps';
import { request } from '../support/http';
import { inParallel, Ledger } from '../support/ledger';
import { RedisServer } from '../support/redis';
import { freePort, sleep } from '../support/wait';

/**
 * Fault 5: Redis is not there when the apps start (it comes up after them, as often happens in a
 * Kubernetes rollout). Both apps start, stay live but not ready, answer 503 fast, and become ready
 * when Redis appears; jobs submitted right after that complete.
 */
describe('Redis down at start-up', () => {
  let port: number;
  let redis: RedisServer | undefined;
  let api: AppProcess;
  let worker: AppProcess;

  beforeAll(async () => {
    port = await freePort();
    const env = stackEnv('chaos-redis-late', { REDIS_URL: `redis://127.0.0.1:${port}` });
    [api, worker] = await Promise.all([startApp('api', env, { waitFor: 'live' }), startApp('worker', env, { waitFor: 'live' })]);
  });

  afterAll(async () => {
    await Promise.all([api?.stop(), worker?.stop()]);
    await redis?.stop();
  });

  it('starts both apps live but not ready, and keeps them so while Redis is missing', async () => {
    const urls = [`${api.url}/health/live`, `${api.url}/health/ready`, `${worker.url}/health/live`, `${worker.url}/health/ready`];
    for (let i = 0; i < 4; i++) {
      const statuses = await Promise.all(urls.map(async (u) => (await fetch(u, { signal: AbortSignal.timeout(5000) })).status));
      expect(statuses).toEqual([200, 503, 200, 503]);
      await sleep(300);
    }
  });

  it('answers 503 with Retry-After within 3 s on every Redis-backed endpoint, never hangs', async () => {
    const id = '00000000-0000-4000-8000-000000000000';
    const calls: Array<[string, string, unknown?]> = [
      ['POST', '/v1/jobs/fibonacci', { n: 3 }],
      ['GET', `/v1/jobs/${id}`],
      ['DELETE', `/v1/jobs/${id}`],
      ['GET', `/v1/jobs/${id}/events`],
    ];
    const answers = await Promise.all(
      calls.map(async ([method, path, json]) => {
        const t0 = Date.now();
        // why: give up after 5 s and record status 0, so a hang shows as a failed assertion, not a stuck test.
        const res = await request(`${api.url}${path}`, { method, json, signal: AbortSignal.timeout(5000) }).catch(() => undefined);
        return { call: `${method} ${path}`, status: res?.status ?? 0, ms: Date.now() - t0, retryAfter: res?.headers.get('retry-after') ?? null };
      }),
    );
    console.log(`[redis-late] before Redis: ${answers.map((a) => `${a.call} -> ${a.status || 'no answer'} in ${a.ms} ms`).join('; ')}`);
    for (const a of answers) expect(a).toMatchObject({ status: 503, retryAfter: expect.stringMatching(/^\d+$/) });
    expect(Math.max(...answers.map((a) => a.ms))).toBeLessThan(3000);
  });

  it('becomes ready when Redis appears, then runs every job accepted right after', async () => {
    redis = await RedisServer.startOnPort(port);
    const t0 = Date.now();
    await Promise.all([api.ready(15_000), worker.ready(15_000)]);
    const readyMs = Date.now() - t0;

    // Right after readiness: 50 distinct jobs of three types, on both queues.
    const ledger = new Ledger('Redis down at start-up');
    const inputs = Array.from({ length: 50 }, (_, i) =>
      i % 3 === 0
        ? (['fibonacci', { n: 10 + i / 3 }] as const)
        : i % 3 === 1
          ? (['echo', { n: 3_000_000 + i }] as const)
          : (['spin', { ms: 20, tag: `late-${i}` }] as const),
    );
    await inParallel(inputs, 10, ([type, input]) => ledger.submit(api.url, type, input));
    const summary = await ledger.check(api.url, [worker], { timeoutMs: 30_000 });
    ledger.print(summary, { readyAfterRedisMs: readyMs });

    expect(ledger.refused.size).toBe(0);
    expect(summary.problems).toEqual([]);
    expect(summary.lost).toBe(0);
    expect(summary.duplicates).toBe(0);
    expect([...api.logs, ...worker.logs].filter((l) => l.level >= 50)).toEqual([]);
  });
});
