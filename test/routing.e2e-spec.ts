import IORedis from 'ioredis';
import { bullKey } from '@app/queue';
import { stackEnv } from './support/apps';
import { appsPerCase } from './support/apps-per-case';
import { request, submit } from './support/http';
import { sleep, waitFor } from './support/wait';

/**
 * Per-type queues: a job type's declared queue decides which workers run it, priorities order a
 * queue, and a worker never holds more jobs than it has threads, whatever the number of queues it
 * consumes. What the routing buys under a flood is timed in test/queues.e2e-spec.ts.
 */
describe('queue routing', () => {
  const start = appsPerCase();

  it('lists each type with its queue and priority', async () => {
    const api = await start('api', stackEnv('queues-list'));
    const { body } = await request<Array<{ type: string; queue: string; priority: number | null; runsVersions: number[] }>>(`${api.url}/v1/job-types`);
    const byType = Object.fromEntries(body.map((t) => [t.type, t]));
    expect(byType.spin).toMatchObject({ queue: 'heavy', priority: null, runsVersions: [1] });
    // A fan-out goes to its child type's queue.
    expect(byType['fan-out']).toMatchObject({ queue: 'heavy' });
    expect(byType.fibonacci).toMatchObject({ queue: 'default', priority: null });
    expect(byType.chaos).toMatchObject({ queue: 'default', priority: 100 });
  });

  it('stops a worker whose WORKER_QUEUES names a queue no type uses, naming it', async () => {
    const worker = await start('worker', stackEnv('queues-typo', { WORKER_QUEUES: 'default,hevy' }), { waitFor: 'none' });
    expect(await worker.exited).toBe(1);
    expect(worker.stderr.join('')).toMatch(/WORKER_QUEUES: there is no queue "hevy" \(the queues are: default, heavy\)/);
  });

  it('holds at most as many jobs as threads across every queue it consumes', async () => {
    const env = stackEnv('queues-slots', { WORKER_THREADS: '1' });
    const api = await start('api', env);
    await start('worker', env);
    const redis = new IORedis(env.REDIS_URL!);
    try {
      await Promise.all([
        submit(api.url, 'chaos', { mode: 'spin', ms: 1200, tag: 'slots-a' }),
        submit(api.url, 'spin', { ms: 2000, tag: 'slots-heavy' }),
        submit(api.url, 'chaos', { mode: 'spin', ms: 1200, tag: 'slots-b' }),
      ]);
      let most = 0;
      let samples = 0;
      const until = Date.now() + 3000;
      while (Date.now() < until) {
        const [d, h] = await Promise.all(['default', 'heavy'].map((q) => redis.llen(bullKey(env.REDIS_PREFIX!, q, 'active'))));
        most = Math.max(most, d + h);
        samples++;
        await sleep(20);
      }
      console.log(`[queues] one thread, two queues: at most ${most} job(s) active over ${samples} samples`);
      expect(most).toBe(1);
    } finally {
      redis.disconnect();
    }
  });

  it('takes a type without a priority before a prioritized one in the same queue', async () => {
    const env = stackEnv('queues-priority', { WORKER_THREADS: '1' });
    const api = await start('api', env);
    const drills = await Promise.all([1, 2, 3].map((i) => submit(api.url, 'chaos', { mode: 'ok', tag: `prio-${i}` })));
    const urgent = await Promise.all([31, 32, 33].map((n) => submit(api.url, 'fibonacci', { n })));
    await start('worker', env);
    const views = await waitFor(
      async () => {
        const all = await Promise.all([...drills, ...urgent].map(async (r) => (await request(`${api.url}/v1/jobs/${r.body.id}`)).body));
        return all.every((v) => v.status === 'completed') ? all : undefined;
      },
      { timeoutMs: 20_000, what: 'all jobs done' },
    );
    const started = (v: { startedAt: string }) => Date.parse(v.startedAt);
    const lastUrgent = Math.max(...views.slice(3).map(started));
    const firstDrill = Math.min(...views.slice(0, 3).map(started));
    expect(lastUrgent).toBeLessThanOrEqual(firstDrill);
  });
});
