import IORedis from 'ioredis';
import { METRIC_PREFIX } from '@app/metrics';
import { queueKeys } from '@app/queue';
import { AppProcess, startApp, startStack, stackEnv } from './support/apps';
import { getJob, readEvents, request, submit } from './support/http';
import { waitFor } from './support/wait';

/** Single flight, cancellation and event streams, across the API and worker processes. */
describe('job lifecycle', () => {
  let api: AppProcess;
  let otherApi: AppProcess; // a second API replica on the same Redis
  let worker: AppProcess;
  let stop: () => Promise<void>;
  // why HOST unset: the apps then listen on their default, every interface, as they do in production.
  const env = stackEnv('lifecycle', { WORKER_THREADS: '2', HOST: undefined });
  const redis = new IORedis(process.env.E2E_REDIS_URL!);

  beforeAll(async () => {
    ({ api, worker, stop } = await startStack(env));
    otherApi = await startApp('api', { ...env, HOST: '127.0.0.1' });
  });
  afterAll(() => Promise.all([stop(), otherApi.stop(), redis.quit()]));

  const started = (type: string) => worker.metric(`${METRIC_PREFIX}job_run_seconds_count`, { type });
  const status = async (id: string) => (await getJob(api.url, id)).body.status as string;

  it('says at start-up the address it listens on: HOST, by default every interface', () => {
    const line = (app: AppProcess) => app.logs.find((l) => l.context === 'Bootstrap' && /listening on|probes on/.test(String(l.msg)))?.msg;
    expect(line(api)).toMatch(`API listening on http://0.0.0.0:${api.port} `);
    expect(line(worker)).toMatch(`; probes on http://0.0.0.0:${worker.port};`);
    expect(line(otherApi)).toMatch(`API listening on http://127.0.0.1:${otherApi.port} `);
  });

  describe('single flight', () => {
    it('runs identical concurrent submissions to two replicas once and gives every caller the same job', async () => {
      const before = await started('fibonacci');
      const input = { n: 38 }; // about 0.4 s
      const replies = await Promise.all(Array.from({ length: 26 }, (_, i) => submit((i % 2 ? otherApi : api).url, 'fibonacci', input)));
      const ids = new Set(replies.map((r) => r.body.id));
      expect(ids.size).toBe(1);
      expect(replies.every((r) => [200, 202].includes(r.status))).toBe(true);
      const [id] = ids;
      await waitFor(async () => (await status(id)) === 'completed', { timeoutMs: 20_000, what: 'completion' });
      const again = await Promise.all(Array.from({ length: 5 }, () => submit(api.url, 'fibonacci', input, { wait: 5 })));
      expect(again.every((r) => r.body.id === id && r.body.result === 39088169)).toBe(true);
      expect((await started('fibonacci')) - before).toBe(1);
      // A cached answer dates the run as GET of the job does.
      const { startedAt, finishedAt } = (await getJob(api.url, id)).body;
      expect(startedAt).toBeDefined();
      for (const { body } of again) expect({ cached: body.cached, startedAt: body.startedAt, finishedAt: body.finishedAt }).toEqual({ cached: true, startedAt, finishedAt });
    });

    it('joins an identical job that completed after its cache look missed the result, instead of running it again', async () => {
      const before = await started('fibonacci');
      const input = { n: 27 };
      const first = await submit(api.url, 'fibonacci', input, { wait: 10 });
      expect(first.body).toMatchObject({ status: 'completed', result: 196418 });
      // As if the next submission had looked the input up just before the result was cached.
      const keys = queueKeys(env.REDIS_PREFIX!);
      // The entry whose job it is (no id key: the job outlives its entry, see ResultCache.set).
      const entries = await redis.keys(keys.cacheEntry('*'));
      const entry = (await Promise.all(entries.map(async (key) => [key, await redis.get(key)] as const))).find(([, raw]) => raw?.includes(`"id":"${first.body.id}"`));
      expect(await redis.del(entry![0])).toBe(1);
      const again = await submit(otherApi.url, 'fibonacci', input, { wait: 10 });
      expect(again.body).toMatchObject({ id: first.body.id, status: 'completed', result: 196418 });
      expect((await started('fibonacci')) - before).toBe(1);
    });

    it('runs a failed input again when it is submitted again', async () => {
      const input = { mode: 'throw', tag: 'again' } as const;
      const first = await submit(api.url, 'chaos', input, { wait: 10 });
      expect(first.body).toMatchObject({ status: 'failed', error: { code: 'JOB_FAILED' } });
      const second = await submit(api.url, 'chaos', input, { wait: 10 });
      expect(second.body.id).not.toBe(first.body.id);
      expect(second.body.status).toBe('failed');
    });
  });

  describe('cancel', () => {
    it('aborts a running job in its worker thread within about a second', async () => {
      const { body } = await submit(api.url, 'chaos', { mode: 'spin', ms: 60_000, tag: 'cancel-running' });
      await waitFor(async () => (await status(body.id)) === 'active', { what: 'active' });
      const t0 = Date.now();
      const res = await request(`${otherApi.url}/v1/jobs/${body.id}`, { method: 'DELETE' });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ id: body.id, status: 'cancelled', error: { code: 'JOB_CANCELLED' } });
      expect(Date.now() - t0).toBeLessThan(1500);
      // The thread was terminated, not left spinning: the pool runs new work at once.
      const next = await submit(api.url, 'fibonacci', { n: 20 }, { wait: 10 });
      expect(next.body.status).toBe('completed');
      expect((await request(`${worker.url}/health/ready`)).status).toBe(200);
    });

    it('removes a queued job, which then reads as cancelled', async () => {
      // Two threads busy: the third job waits in the queue.
      const busy = await Promise.all([1, 2].map((i) => submit(api.url, 'chaos', { mode: 'sleep', ms: 4000, tag: `busy-${i}` })));
      const queued = await submit(api.url, 'chaos', { mode: 'ok', tag: 'queued-victim' });
      expect(await status(queued.body.id)).toBe('queued');
      const res = await request(`${api.url}/v1/jobs/${queued.body.id}`, { method: 'DELETE' });
      expect(res.status).toBe(200);
      expect(res.body.status).toBe('cancelled');
      expect((await getJob(api.url, queued.body.id)).body).toMatchObject({ status: 'cancelled', error: { code: 'JOB_CANCELLED' } });
      // Cancelling again, or cancelling a finished job, is a conflict.
      expect((await request(`${api.url}/v1/jobs/${queued.body.id}`, { method: 'DELETE' })).status).toBe(409);
      await Promise.all(busy.map((b) => waitFor(async () => (await status(b.body.id)) === 'completed', { what: 'busy done' })));
      const done = await request(`${api.url}/v1/jobs/${busy[0].body.id}`, { method: 'DELETE' });
      expect(done.status).toBe(409);
      expect(done.body.code).toBe('JOB_ALREADY_FINISHED');
      // It never ran, and the same input can be submitted again.
      const retry = await submit(api.url, 'chaos', { mode: 'ok', tag: 'queued-victim' }, { wait: 10 });
      expect(retry.body).toMatchObject({ status: 'completed' });
      expect(retry.body.id).not.toBe(queued.body.id);
    });

    it('answers 404 for an unknown job', async () => {
      const res = await request(`${api.url}/v1/jobs/3f1c1d9e-1111-4222-8333-444455556666`, { method: 'DELETE' });
      expect(res.status).toBe(404);
    });
  });

  describe('events', () => {
    it('streams progress, then completed, then ends, from any replica', async () => {
      const { body } = await submit(api.url, 'chaos', { mode: 'sleep', ms: 1200, tag: 'sse' });
      const events = await readEvents(`${otherApi.url}/v1/jobs/${body.id}/events`);
      const names = events.map((e) => e.event);
      expect(names.at(-1)).toBe('completed');
      expect(names.slice(0, -1).every((n) => n === 'progress')).toBe(true);
      expect(names.filter((n) => n === 'progress').length).toBeGreaterThanOrEqual(3);
      const progress = events.filter((e) => e.event === 'progress').map((e) => e.data.progress);
      expect([...progress].sort((a, b) => a - b)).toEqual(progress);
      expect(events.at(-1)!.data).toMatchObject({ id: body.id, status: 'completed' });
    });

    it('ends with cancelled when the job is cancelled, on another API replica', async () => {
      const { body } = await submit(api.url, 'chaos', { mode: 'sleep', ms: 60_000, tag: 'sse-cancel' });
      const stream = readEvents(`${otherApi.url}/v1/jobs/${body.id}/events`);
      await waitFor(async () => (await status(body.id)) === 'active', { what: 'active' });
      await request(`${api.url}/v1/jobs/${body.id}`, { method: 'DELETE' });
      const events = await stream;
      expect(events.at(-1)).toMatchObject({ event: 'cancelled', data: { status: 'cancelled' } });
    });

    it('ends at once for a finished job, with failed for a failed one', async () => {
      const failed = await submit(api.url, 'chaos', { mode: 'throw', tag: 'sse-failed' }, { wait: 10 });
      const events = await readEvents(`${api.url}/v1/jobs/${failed.body.id}/events`, 5000);
      expect(events).toEqual([{ event: 'failed', data: expect.objectContaining({ status: 'failed', error: { code: 'JOB_FAILED', message: expect.any(String) } }) }]);
    });

    it('answers 404 for an unknown job', async () => {
      const res = await request(`${api.url}/v1/jobs/3f1c1d9e-1111-4222-8333-444455556666/events`);
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toMatch(/problem\+json/);
    });
  });
});
