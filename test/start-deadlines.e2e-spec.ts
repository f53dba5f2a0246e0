import { randomUUID } from 'node:crypto';
import { Queue } from 'bullmq';
import IORedis from 'ioredis';
import { bullKey, type JobData, queuePrefix, startDeadlinesKey } from '@app/queue';
import { AppProcess, startApp, stackEnv } from './support/apps';
import { getJob, readEvents, request, submit } from './support/http';
import { waitFor } from './support/wait';

/**
 * Start deadlines (docs/api.md#start-deadlines) against real processes: an API alone first (no
 * worker anywhere), then with a worker whose two threads are busy. One API for the whole file, one
 * worker started halfway.
 */
describe('start deadlines (Start-Within, startWithinMs)', () => {
  const env = stackEnv('start-deadlines');
  const redis = new IORedis(process.env.E2E_REDIS_URL!, { maxRetriesPerRequest: null });
  let api: AppProcess;
  let worker: AppProcess | undefined;
  const within = (seconds: string) => ({ headers: { 'start-within': seconds } });
  /** Job `id`'s final view, from its event stream. */
  const final = async (id: string) => (await readEvents(`${api.url}/v1/jobs/${id}/events`, 20_000)).at(-1)!.data;
  /** Did any worker run job `id`? The workers log each start at debug level. */
  const ran = (id: string) => worker?.logs.some((l) => l.jobId === id && l.msg === 'job started') ?? false;

  beforeAll(async () => {
    api = await startApp('api', env);
  });
  afterAll(async () => {
    await Promise.all([api?.stop(), worker?.stop()]);
    redis.disconnect();
  });

  it('refuses a malformed Start-Within with a 400 problem, queueing nothing', async () => {
    for (const header of ['soon', '0', '-5', '1.5s']) {
      const reply = await submit(api.url, 'echo', { text: 'malformed' }, within(header));
      expect(reply.status).toBe(400);
      expect(reply.headers.get('content-type')).toContain('application/problem+json');
      expect(reply.body).toMatchObject({ code: 'INVALID_HEADER' });
    }
    expect(await redis.zcard(startDeadlinesKey(env.REDIS_PREFIX!, 'default'))).toBe(0);
    expect(await redis.llen(bullKey(env.REDIS_PREFIX!, 'default', 'wait'))).toBe(0);
  });

  it('ends a job expired at its deadline with no worker running: the view, the wait and the event stream say so', async () => {
    const submitted = Date.now();
    const queued = await submit(api.url, 'echo', { text: 'nobody-runs-me' }, within('2'));
    expect(queued.status).toBe(202);
    const id = queued.body.id as string;
    const events = await readEvents(`${api.url}/v1/jobs/${id}/events`, 10_000);
    expect(events.at(-1)).toMatchObject({ event: 'expired', data: { id, status: 'expired', error: { code: 'JOB_EXPIRED' } } });
    const waited = await getJob(api.url, id);
    expect(waited.body).toMatchObject({ id, status: 'expired', attempts: 0, error: { code: 'JOB_EXPIRED' } });
    expect(waited.body.startedAt).toBeUndefined();
    // Never early: the deadline counts from the submission; and not late by more than the issue's
    // second (#30), measured from before the request was sent, so the figure only errs on the late side.
    const late = Date.parse(waited.body.finishedAt) - (submitted + 2000);
    console.log(`[start-deadlines] no worker: expired ${late} ms after its 2 s deadline`);
    expect(late).toBeGreaterThanOrEqual(0);
    expect(late).toBeLessThan(1000);
    expect(await api.metric('nest_offload_jobs_expired_total', { type: 'echo' })).toBe(1);
    // Removed from BullMQ, its deduplication id released: the same input queues a new job.
    const again = await submit(api.url, 'echo', { text: 'nobody-runs-me' }, within('60'));
    expect(again.body.id).not.toBe(id);
    await request(`${api.url}/v1/jobs/${again.body.id}`, { method: 'DELETE' });
  });

  it('keeps a job a joining submission still wants until the latest deadline among them', async () => {
    const first = await submit(api.url, 'echo', { text: 'wanted-longer' }, within('1'));
    const joined = await submit(api.url, 'echo', { text: 'wanted-longer' }, within('3'));
    expect(joined.body.id).toBe(first.body.id);
    const body = await final(first.body.id);
    expect(body.status).toBe('expired');
    expect(Date.parse(body.finishedAt)).toBeGreaterThanOrEqual(Date.parse(first.body.createdAt) + 3000);

    // A joining submission without a deadline keeps it for as long as it takes.
    const patient = await submit(api.url, 'echo', { text: 'wanted-for-ever' }, within('1'));
    await submit(api.url, 'echo', { text: 'wanted-for-ever' });
    // Past the first deadline, once a sweep has seen it (every 250 ms).
    await waitFor(async () => Date.now() > Date.parse(patient.body.createdAt) + 1500, { timeoutMs: 5000 });
    expect((await getJob(api.url, patient.body.id)).body.status).toBe('queued');
    expect(await redis.zscore(startDeadlinesKey(env.REDIS_PREFIX!, 'default'), patient.body.id)).toBe('inf');
    await request(`${api.url}/v1/jobs/${patient.body.id}`, { method: 'DELETE' });
  });

  it('ends a job behind busy workers expired, and no worker ever runs it', async () => {
    worker = await startApp('worker', env);
    // Both threads (WORKER_THREADS=2) busy for 3 s.
    const busy = await Promise.all([1, 2].map((n) => submit(api.url, 'spin', { ms: 3000, tag: `busy-${n}`, sleep: true })));
    await waitFor(() => busy.every(({ body }) => ran(body.id)), { timeoutMs: 10_000 });
    const submitted = Date.now();
    const late = await submit(api.url, 'spin', { ms: 0, tag: 'behind-the-backlog' }, within('2'));
    expect(await final(late.body.id)).toMatchObject({ status: 'expired', error: { code: 'JOB_EXPIRED' } });
    const lateMs = Date.parse((await getJob(api.url, late.body.id)).body.finishedAt) - (submitted + 2000);
    console.log(`[start-deadlines] workers busy: expired ${lateMs} ms after its 2 s deadline`);
    expect(lateMs).toBeGreaterThanOrEqual(0);
    expect(lateMs).toBeLessThan(1000);
    await Promise.all(busy.map(({ body }) => final(body.id)));
    expect(ran(late.body.id)).toBe(false);
  });

  it('has a worker that picks up a job past its deadline end it expired, unrun', async () => {
    // Added as an API would, with a deadline in the past and its entry already popped (an API is removing it).
    const queue = new Queue<JobData>('default', { connection: redis, prefix: queuePrefix(env.REDIS_PREFIX!, 'default') });
    const id = randomUUID();
    await queue.add('echo', { inputJson: '{"choice":"a","text":"picked-up-late"}', version: 1, key: `late-${id}`, startBy: Date.now() - 1 }, { jobId: id, attempts: 3 });
    await queue.close();
    await waitFor(async () => (await getJob(api.url, id)).body.status === 'expired', { timeoutMs: 10_000 });
    expect((await getJob(api.url, id)).body).toMatchObject({ status: 'expired', error: { code: 'JOB_EXPIRED' } });
    expect(ran(id)).toBe(false);
    expect(await worker!.metric('nest_offload_jobs_expired_total', { type: 'echo' })).toBe(1);
  });
});
