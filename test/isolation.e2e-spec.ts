import { METRIC_PREFIX } from '@app/metrics';
import { startStack, stackEnv } from './support/apps';
import { submit } from './support/http';

/**
 * CPU work never runs on an event loop: with every pool thread saturated for several lock periods,
 * the worker's loop still renews the BullMQ locks, so no job is declared stalled and run twice.
 * (test/chaos has the negative control: the same work inline in a processor does stall.)
 */
describe('event-loop isolation', () => {
  it('keeps long CPU jobs locked: each runs exactly once', async () => {
    const { api, worker, stop } = await startStack(stackEnv('isolation', { WORKER_THREADS: '2', JOB_LOCK_MS: '1000' }));
    try {
      const jobs = await Promise.all([1, 2, 3].map((i) => submit(api.url, 'chaos', { mode: 'spin', ms: 4000, tag: `long-${i}` }, { wait: 30 })));
      for (const { body } of jobs) expect(body).toMatchObject({ status: 'completed', attempts: 1 });
      expect(await worker.metric(`${METRIC_PREFIX}job_run_seconds_count`, { type: 'chaos' })).toBe(3);
      expect(worker.logs.filter((l) => /stalled/i.test(l.msg))).toEqual([]);
      // The API answered other requests meanwhile: the probes of both apps never failed.
      expect((await fetch(`${api.url}/health/ready`)).status).toBe(200);
    } finally {
      await stop();
    }
  });
});
