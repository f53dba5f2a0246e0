import { randomBytes } from 'node:crypto';
import IORedis from 'ioredis';
import { JobRegistry } from '@app/jobs';
import { jobTagsKey, listingEndsKey, listingKey, ownersKey } from '@app/queue';
import { AppProcess, startAll, startApp, stackEnv } from './support/apps';
import { present } from './support/capabilities';
import { getJob, request, submit } from './support/http';
import { waitFor } from './support/wait';

const key = () => randomBytes(32).toString('hex');
const ALICE = key();
const BOB = key();
const ADMIN = key();
const as = (apiKey: string) => ({ 'x-api-key': apiKey });

/**
 * JOB_LISTING=off (docs/configuration.md): a service that never lists jobs writes none of the listing
 * index (libs/queue/src/job-index.ts), neither the API with a job nor the worker at its end, and the
 * listing routes answer a problem naming the variable. Owners are still kept: they are who may see a job.
 */
describe('JOB_LISTING=off: no listing index written, the listing routes a 404 problem', () => {
  const env = stackEnv('listing-off', { API_KEYS: `alice=${ALICE},bob=${BOB}`, ADMIN_API_KEYS: `ops=${ADMIN}`, JOB_LISTING: 'off' });
  const prefix = env.REDIS_PREFIX!;
  const queues = JobRegistry.forConfig({ chaosJobs: true }).queues();
  const run = randomBytes(4).toString('hex');
  let api: AppProcess;
  let worker: AppProcess;
  let redis: IORedis;

  beforeAll(async () => {
    redis = new IORedis(env.REDIS_URL!, { maxRetriesPerRequest: null });
    [api, worker] = await startAll([startApp('api', env), startApp('worker', env)]);
  });

  afterAll(async () => {
    await Promise.all([api?.stop(), worker?.stop()]);
    redis?.disconnect();
  });

  /** Every key of the listing index under the stack's prefix, in any queue. */
  const indexKeys = async () => {
    const patterns = queues.flatMap((queue) => [`${listingKey(prefix, queue, '')}*`, listingKey(prefix, queue), listingEndsKey(prefix, queue), `${jobTagsKey(prefix, queue, '')}*`]);
    return (await Promise.all(patterns.map((pattern) => redis.keys(pattern)))).flat();
  };

  it('answers GET /v1/jobs and GET /admin/jobs with 404 LISTING_DISABLED, and Job-Tags with a 400, queueing nothing', async () => {
    for (const [path, apiKey] of [['/v1/jobs?limit=5', ALICE], ['/v1/jobs?status=nonsense', ALICE], ['/admin/jobs?caller=alice', ADMIN]] as const) {
      const res = await request(`${api.url}${path}`, { headers: as(apiKey) });
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toContain('application/problem+json');
      expect(res.body).toMatchObject({ code: 'LISTING_DISABLED', detail: expect.stringContaining('JOB_LISTING=off') });
    }
    const tagged = await submit(api.url, 'spin', { ms: 0, tag: `${run}-tagged` }, { headers: { ...as(ALICE), 'job-tags': 'order:42' } });
    expect(tagged.status).toBe(400);
    expect(tagged.body).toMatchObject({ code: 'INVALID_HEADER', detail: expect.stringMatching(/^Job-Tags: .*JOB_LISTING=off/) });
  });

  it('writes no index key for jobs that complete, join, expire queued or are cancelled, and still keeps their owners', async () => {
    // Two long jobs hold the worker's two threads, so the next ones wait behind them.
    const long = await Promise.all([1, 2].map((i) => submit(api.url, 'spin', { ms: 2500, tag: `${run}-long-${i}`, sleep: true }, { headers: as(ALICE) })));
    const expiring = await submit(api.url, 'spin', { ms: 0, tag: `${run}-expiring` }, { headers: { ...as(ALICE), 'start-within': '1' } });
    const cancelled = await submit(api.url, 'spin', { ms: 0, tag: `${run}-cancelled` }, { headers: as(ALICE) });
    expect((await request(`${api.url}/v1/jobs/${cancelled.body.id}`, { method: 'DELETE', headers: as(ALICE) })).body).toMatchObject({ status: 'cancelled' });
    await waitFor(async () => (await getJob(api.url, expiring.body.id, as(ALICE))).body.status === 'expired', { timeoutMs: 15_000, what: 'the queued job expired' });
    for (const { body } of long) await waitFor(async () => (await getJob(api.url, body.id, as(ALICE))).body.status === 'completed', { timeoutMs: 30_000, what: `long job ${body.id} completed` });
    // A completed job, and Bob joining it through its cached result.
    const done = await submit(api.url, 'spin', { ms: 0, tag: `${run}-done` }, { headers: as(ALICE), wait: 10 });
    expect(done.body).toMatchObject({ status: 'completed' });
    expect((await submit(api.url, 'spin', { ms: 0, tag: `${run}-done` }, { headers: as(BOB) })).body).toMatchObject({ id: done.body.id, cached: true });
    if (present('batch')) {
      const batch = await request(`${api.url}/v1/jobs/spin/batch`, { method: 'POST', headers: { ...as(BOB), prefer: 'wait=10' }, json: { items: [{ ms: 0, tag: `${run}-b1` }, { ms: 0, tag: `${run}-b2` }] } });
      expect(batch.status).toBe(200);
      // A batch refuses Job-Tags as a single submission does.
      const tagged = await request(`${api.url}/v1/jobs/spin/batch`, { method: 'POST', headers: { ...as(BOB), 'job-tags': 'x' }, json: { items: [{ ms: 0 }] } });
      expect(tagged.body).toMatchObject({ code: 'INVALID_HEADER' });
    }

    expect(await indexKeys()).toEqual([]);
    // Ownership is not the listing's: both callers own the joined job, and only they see it.
    expect((await redis.smembers(ownersKey(prefix, 'heavy', done.body.id))).sort()).toEqual(['key:alice', 'key:bob']);
    expect((await getJob(api.url, done.body.id, as(BOB))).status).toBe(200);
    expect((await getJob(api.url, long[0].body.id, as(BOB))).status).toBe(404);
  });
});
