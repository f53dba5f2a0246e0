import IORedis from 'ioredis';
import { bullKey } from '@app/queue';
import { startApp, stackEnv } from './support/apps';
import { getJob, request, submit } from './support/http';
import { waitFor } from './support/wait';

/** SIGTERM drains: readiness drops, work in flight finishes or goes back to the queue, exit code 0. */
describe('graceful shutdown', () => {
  const status = async (api: string, id: string) => (await getJob(api, id)).body;

  it('lets an active job finish within the deadline, then exits 0', async () => {
    const env = stackEnv('shutdown-finish', { SHUTDOWN_TIMEOUT_MS: '8000' });
    const [api, worker] = await Promise.all([startApp('api', env), startApp('worker', env)]);
    try {
      const { body } = await submit(api.url, 'chaos', { mode: 'sleep', ms: 1500, tag: 'finish' });
      await waitFor(async () => (await status(api.url, body.id)).status === 'active', { what: 'active' });
      const t0 = Date.now();
      worker.signal('SIGTERM');
      await waitFor(async () => (await fetch(`${worker.url}/health/ready`)).status === 503, { timeoutMs: 1000, what: 'not ready' });
      expect(await worker.exited).toBe(0);
      expect(Date.now() - t0).toBeLessThan(8000);
      expect(await status(api.url, body.id)).toMatchObject({ status: 'completed', attempts: 1 });
    } finally {
      await Promise.all([api.stop(), worker.stop()]);
    }
  });

  it('hands unfinished jobs back at the deadline; another worker finishes them', async () => {
    const env = stackEnv('shutdown-handback', { SHUTDOWN_TIMEOUT_MS: '1000', WORKER_THREADS: '2' });
    const [api, first] = await Promise.all([startApp('api', env), startApp('worker', env)]);
    let second: Awaited<ReturnType<typeof startApp>> | undefined;
    try {
      const jobs = await Promise.all([1, 2].map((i) => submit(api.url, 'chaos', { mode: 'sleep', ms: 2500, tag: `handback-${i}` })));
      await waitFor(async () => (await Promise.all(jobs.map((j) => status(api.url, j.body.id)))).every((v) => v.status === 'active'), {
        what: 'both active',
      });
      const t0 = Date.now();
      expect(await first.stop('SIGTERM')).toBe(0);
      expect(Date.now() - t0).toBeLessThan(1000 + 3000);
      for (const j of jobs) expect((await status(api.url, j.body.id)).status).toBe('queued');
      // Nothing is left active: the jobs are waiting, not locked by a dead worker.
      const redis = new IORedis(env.REDIS_URL!);
      expect(await redis.llen(bullKey(env.REDIS_PREFIX!, 'default', 'active'))).toBe(0);
      redis.disconnect();

      second = await startApp('worker', env);
      for (const j of jobs) {
        await waitFor(async () => (await status(api.url, j.body.id)).status === 'completed', { timeoutMs: 15_000, what: 'completed' });
      }
      // Handing back is not a failed attempt.
      for (const j of jobs) expect((await status(api.url, j.body.id)).error).toBeUndefined();
    } finally {
      await Promise.all([api.stop(), first.stop(), second?.stop()]);
    }
  });

  it('stops the API cleanly: a waiting request is answered, then the process exits 0', async () => {
    const env = stackEnv('shutdown-api');
    const api = await startApp('api', env); // no worker: the job stays queued
    const waiting = submit(api.url, 'fibonacci', { n: 10 }, { wait: 20 });
    await new Promise((r) => setTimeout(r, 500)); // the request is in flight, waiting for a result
    const t0 = Date.now();
    api.signal('SIGTERM');
    const res = await waiting;
    expect(res.status).toBe(202);
    expect(Date.now() - t0).toBeLessThan(5000);
    expect(await api.exited).toBe(0);
    const refused = await request(`${api.url}/health/ready`).catch(() => 'refused');
    expect(refused).toBe('refused');
  });
});
