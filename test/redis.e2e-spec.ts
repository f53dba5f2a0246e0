import { startApp, stackEnv } from './support/apps';
import { request, submit } from './support/http';
import { RedisServer } from './support/redis';
import { waitFor } from './support/wait';

/**
 * Redis is the one dependency: without it the API says 503 fast, and both apps recover by themselves.
 * (test/chaos has the same under load, with a ledger of every accepted job, and Redis late at start-up.)
 */
describe('when Redis is away', () => {
  it('answers 503 with Retry-After, never hangs, and recovers when Redis returns', async () => {
    const redis = await RedisServer.start({ appendonly: true });
    const env = stackEnv('redis-outage', { REDIS_URL: redis.url });
    const [api, worker] = await Promise.all([startApp('api', env), startApp('worker', env)]);
    try {
      const before = await submit(api.url, 'fibonacci', { n: 12 }, { wait: 10 });
      expect(before.body.status).toBe('completed');

      await redis.stopProcess();
      const t0 = Date.now();
      const down = await submit(api.url, 'fibonacci', { n: 13 });
      expect(Date.now() - t0).toBeLessThan(3000);
      expect(down.status).toBe(503);
      expect(down.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(down.headers.get('content-type')).toMatch(/problem\+json/);
      expect((await request(`${api.url}/v1/jobs/${before.body.id}`)).status).toBe(503);
      await waitFor(async () => (await fetch(`${api.url}/health/ready`)).status === 503, { what: 'api not ready' });
      await waitFor(async () => (await fetch(`${worker.url}/health/ready`)).status === 503, { what: 'worker not ready' });
      expect((await fetch(`${api.url}/health/live`)).status).toBe(200);

      await redis.startProcess();
      await Promise.all([api.ready(), worker.ready()]);
      const after = await submit(api.url, 'fibonacci', { n: 14 }, { wait: 10 });
      expect(after.body).toMatchObject({ status: 'completed', result: 377 });
      expect((await request(`${api.url}/v1/jobs/${before.body.id}`)).body.result).toBe(144);
    } finally {
      await Promise.all([api.stop(), worker.stop()]);
      await redis.stop();
    }
  });

  it('refuses new work with 503 once MAX_BACKLOG jobs are waiting', async () => {
    const api = await startApp('api', stackEnv('backlog', { MAX_BACKLOG: '3' })); // no worker: jobs pile up
    try {
      for (let n = 1; n <= 3; n++) expect((await submit(api.url, 'fibonacci', { n })).status).toBe(202);
      await new Promise((r) => setTimeout(r, 300)); // the backlog is counted at most every 250 ms
      const full = await submit(api.url, 'fibonacci', { n: 4 });
      expect(full.status).toBe(503);
      expect(full.body.code).toBe('BACKLOG_FULL');
      expect(full.headers.get('retry-after')).toMatch(/^\d+$/);
    } finally {
      await api.stop();
    }
  });
});
