import { METRIC_PREFIX } from '@app/metrics';
import { stackEnv } from './support/apps';
import { appsPerCase } from './support/apps-per-case';
import { submit } from './support/http';
import { sleep } from './support/wait';

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
 * Per-type queues, timed: a flood of long jobs on one queue cannot delay the short ones of another
 * served by workers of their own, and does when one worker serves both. In `npm test`'s serial lane,
 * as it times what it measures; the routing itself is test/routing.e2e-spec.ts's.
 */
describe('queues under a flood', () => {
  const start = appsPerCase();

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
});
