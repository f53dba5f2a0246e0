import IORedis from 'ioredis';
import { METRIC_PREFIX } from '@app/metrics';
import { bullKey } from '@app/queue';
import { AppProcess, startApp, stackEnv } from './support/apps';
import { request, submit } from './support/http';
import { sleep, waitFor } from './support/wait';

/** p50 of `count` default-queue jobs run one after the other (fresh input each, so no cache hit). */
async function p50OfDefaultJobs(api: string, tag: string, count: number): Promise<number> {
  const ms: number[] = [];
  for (let i = 0; i < count; i++) {
    const t0 = performance.now();
    const { body } = await submit(api, 'chaos', { mode: 'ok', tag: `${tag}-${i}` }, { wait: 30 });
    ms.push(performance.now() - t0);
    expect(body.status).toBe('completed');
  }
  ms.sort((a, b) => a - b);
  return ms[Math.floor(ms.length / 2)];
}

/** Floods the heavy queue with `count` spin jobs of a second each (distinct inputs). */
async function floodHeavy(api: string, count: number, seed: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    const { status } = await submit(api, 'spin', { ms: 1000, tag: `flood-${seed}-${i}` });
    expect(status).toBe(202);
  }
}

/**
 * Per-type queues: a job type's declared queue decides which workers run it, so a flood of long
 * jobs on one queue cannot delay the short ones of another, and a worker never holds more jobs
 * than it has threads, whatever the number of queues it consumes.
 */
describe('queues and routing', () => {
  const procs: AppProcess[] = [];
  const start = async (kind: 'api' | 'worker', env: Record<string, string | undefined>) => {
    const app = await startApp(kind, env);
    procs.push(app);
    return app;
  };

  afterEach(async () => {
    await Promise.all(procs.splice(0).map((p) => p.stop('SIGKILL')));
  });

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
    const worker = await startApp('worker', stackEnv('queues-typo', { WORKER_QUEUES: 'default,hevy' }), { waitFor: 'none' });
    procs.push(worker);
    expect(await worker.exited).toBe(1);
    expect(worker.stderr.join('')).toMatch(/WORKER_QUEUES: there is no queue "hevy" \(the queues are: default, heavy\)/);
  });

  it('keeps default-queue jobs fast while the heavy queue is flooded, on workers of their own', async () => {
    const env = stackEnv('queues-split', { WORKER_THREADS: '1' });
    const api = await start('api', env);
    await Promise.all([start('worker', { ...env, WORKER_QUEUES: 'heavy' }), start('worker', { ...env, WORKER_QUEUES: 'default' })]);

    await p50OfDefaultJobs(api.url, 'warm', 5);
    const idle = await p50OfDefaultJobs(api.url, 'idle', 20);
    await floodHeavy(api.url, 30, 1);
    const flooded = await p50OfDefaultJobs(api.url, 'flooded', 20);
    const backlog = await api.metric(`${METRIC_PREFIX}queue_backlog`, { queue: 'heavy' });
    console.log(`[queues] default-queue p50: idle ${idle.toFixed(1)} ms, heavy queue flooded ${flooded.toFixed(1)} ms (×${(flooded / idle).toFixed(2)}); heavy backlog after: ${backlog}`);
    // The flood was still there while we measured.
    expect(backlog).toBeGreaterThan(10);
    // why the 5 ms floor: an idle p50 of a few ms on a shared host doubles from noise alone.
    expect(flooded).toBeLessThanOrEqual(2 * Math.max(idle, 5));
  });

  it('the control: one worker serving both queues makes default jobs wait behind heavy ones', async () => {
    const env = stackEnv('queues-shared', { WORKER_THREADS: '1' });
    const api = await start('api', env);
    await start('worker', env);
    const idle = await p50OfDefaultJobs(api.url, 'idle', 5);
    await floodHeavy(api.url, 10, 2);
    await sleep(200);
    const flooded = await p50OfDefaultJobs(api.url, 'flooded', 5);
    console.log(`[queues] control, one worker for both queues: default p50 idle ${idle.toFixed(1)} ms, flooded ${flooded.toFixed(1)} ms`);
    expect(flooded).toBeGreaterThan(2 * Math.max(idle, 5));
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
