import { randomBytes } from 'node:crypto';
import { type Job, Queue } from 'bullmq';
import IORedis from 'ioredis';
import { allJobs, canonicalJson, contentKey, coreJobs } from '@app/jobs';
import { type CallerShare, callerShares, contentKeyOf, type JobData, ownersKey, PARK_DELAY_MS, queuePrefix, watchersKey } from '@app/queue';
import { AppProcess, AppEnv, startAll, startApp, stackEnv } from './support/apps';
import { ifPresent } from './support/capabilities';
import { getJob, readEvents, request, submit } from './support/http';
import { WebhookReceiver } from './support/webhook-receiver';
import { waitFor } from './support/wait';

const key = () => randomBytes(32).toString('hex');
const ALICE = key();
const BOB = key();
const CAROL = key();
const DAVE = key();
const ADMIN = key();
const as = (apiKey: string) => ({ 'x-api-key': apiKey });
const fibonacci = coreJobs.find((d) => d.name === 'fibonacci')!;

/**
 * Callers cannot see, cancel or poison each other's work: the reproductions of a security review
 * (production mode, API keys alice, bob and carol, an admin key for the dashboard) turned into
 * tests. Each failed on the code before job owners, `share: 'caller'` and worker-computed keys.
 */
describe('tenancy: one API key cannot see, cancel or poison another key\'s work', () => {
  const env: AppEnv = stackEnv('tenancy', {
    NODE_ENV: 'production',
    CHAOS_JOBS: undefined,
    API_KEYS: `alice=${ALICE},bob=${BOB},carol=${CAROL}`,
    ADMIN_API_KEYS: `ops=${ADMIN}`,
    QUEUE_DASHBOARD: 'true',
    QUEUE_DASHBOARD_READONLY: 'false',
    WORKER_THREADS: '2',
  });
  let api: AppProcess;
  let worker: AppProcess;
  let redis: IORedis;
  let queue: Queue<JobData, unknown, string>;

  beforeAll(async () => {
    redis = new IORedis(env.REDIS_URL!, { maxRetriesPerRequest: null });
    queue = new Queue<JobData, unknown, string>('default', { connection: redis, prefix: queuePrefix(env.REDIS_PREFIX!, 'default') });
    [api, worker] = await startAll([startApp('api', env), startApp('worker', env)]);
  });

  afterAll(async () => {
    await Promise.all([api?.stop(), worker?.stop()]);
    await queue?.close();
    redis?.disconnect();
  });

  /** Job data claiming the cached result of fibonacci(`claimed`) for the input `{ n }`. */
  const forged = (n: number, claimed: number) => ({ inputJson: canonicalJson({ n }), version: 1, key: contentKey(fibonacci, canonicalJson({ n: claimed })) });

  it('a job written straight into the queue with a forged content key is cached under the key its input gives', async () => {
    // Any way in but the API (a script, another service): the worker caches under the key it computes.
    const direct = await queue.add('fibonacci', forged(11, 21));
    await waitFor(async () => (await queue.getJobState(direct.id!)) === 'completed', { what: 'the forged job completed' });
    const res = await submit(api.url, 'fibonacci', { n: 21 }, { headers: as(ALICE), wait: 10 });
    expect(res.body).toMatchObject({ status: 'completed', result: 10946 });
    expect(res.body.cached).toBeUndefined();
    expect((await submit(api.url, 'fibonacci', { n: 11 }, { headers: as(ALICE) })).body).toMatchObject({ result: 89, cached: true });
  });

  ifPresent('queue-dashboard').it("a job added through the dashboard's API with a forged content key is rewritten as a submission of its input", async () => {
    const added = await request(`${api.url}/admin/queues/api/queues/default/add`, { method: 'POST', headers: as(ADMIN), json: { name: 'fibonacci', data: forged(10, 20), options: {} } });
    expect(added.status).toBe(200);
    const viaDashboard = await queue.getJob(added.body.job.id);
    expect({ inputJson: viaDashboard!.data.inputJson, key: contentKeyOf(viaDashboard!) }).toEqual({ inputJson: '{"n":10}', key: contentKey(fibonacci, '{"n":10}') });
    await waitFor(async () => (await queue.getJobState(viaDashboard!.id!)) === 'completed', { what: 'the dashboard job completed' });
    const res = await submit(api.url, 'fibonacci', { n: 20 }, { headers: as(ALICE), wait: 10 });
    expect(res.body).toMatchObject({ status: 'completed', result: 6765 });
    expect(res.body.cached).toBeUndefined();
    // The dashboard's API is an admin's: a client key is refused there.
    expect((await request(`${api.url}/admin/queues/api/queues/default/add`, { method: 'POST', headers: as(BOB), json: { name: 'fibonacci', data: { n: 1 } } })).status).toBe(403);
  });

  ifPresent('queue-dashboard').it('a dashboard add of an input the type refuses is a 400, and nothing is queued', async () => {
    const before = await queue.count();
    const res = await request(`${api.url}/admin/queues/api/queues/default/add`, { method: 'POST', headers: as(ADMIN), json: { name: 'fibonacci', data: { n: -1 } } });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: 'INVALID_INPUT' });
    expect(await queue.count()).toBe(before);
  });

  it('only the callers who submitted or joined a job see it: others get 404 from GET, DELETE and the event stream', async () => {
    const input = { n: 42 }; // a few seconds
    const alice = await submit(api.url, 'fibonacci', input, { headers: as(ALICE) });
    const bob = await submit(api.url, 'fibonacci', input, { headers: as(BOB) });
    expect(alice.status).toBe(202);
    expect(bob.body.id).toBe(alice.body.id); // single flight: one run
    const id = alice.body.id;
    for (const apiKey of [ALICE, BOB]) expect((await getJob(api.url, id, as(apiKey))).status).toBe(200);
    expect((await getJob(api.url, id, as(CAROL))).body).toMatchObject({ status: 404, code: 'JOB_NOT_FOUND' });
    expect((await request(`${api.url}/v1/jobs/${id}`, { method: 'DELETE', headers: as(CAROL) })).status).toBe(404);
    expect((await request(`${api.url}/v1/jobs/${id}/events`, { headers: as(CAROL) })).status).toBe(404);

    // Bob cancels: he withdraws, the run goes on for Alice, who gets her result.
    const withdrawn = await request(`${api.url}/v1/jobs/${id}`, { method: 'DELETE', headers: as(BOB) });
    expect(withdrawn.status).toBe(200);
    expect(withdrawn.body).toMatchObject({ id, status: 'cancelled', error: { code: 'JOB_CANCELLED', message: expect.stringMatching(/^Withdrawn/) } });
    expect((await getJob(api.url, id, as(BOB))).status).toBe(404);
    const events = await readEvents(`${api.url}/v1/jobs/${id}/events`, 60_000, as(ALICE));
    expect(events.at(-1)).toMatchObject({ event: 'completed', data: { id, status: 'completed' } });
    expect((await getJob(api.url, id, as(ALICE))).body).toMatchObject({ status: 'completed', result: 267914296 });
  }, 90_000);

  it('a submission that joins an identical job leaves no owner or watcher record under the id it planned', async () => {
    const records = async () => [...(await redis.keys(ownersKey(env.REDIS_PREFIX!, 'default', '*'))), ...(await redis.keys(watchersKey(env.REDIS_PREFIX!, 'default', '*')))];
    const before = new Set(await records());
    const input = { n: 43 }; // seconds, and not cached by the tests before
    const first = await submit(api.url, 'fibonacci', input, { headers: as(ALICE) });
    // Two joins while it runs: one caller waits on it (a watcher), one does not.
    const joins = await Promise.all([submit(api.url, 'fibonacci', input, { headers: as(BOB), wait: 1 }), submit(api.url, 'fibonacci', input, { headers: as(CAROL) })]);
    expect(joins.map((res) => [res.status, res.body.id])).toEqual([
      [202, first.body.id],
      [202, first.body.id],
    ]);
    // Before the fix every join left an owner set for 7 days (and a waiting one a watcher set for a day).
    const added = (await records()).filter((key) => !before.has(key));
    expect(added.map((key) => key.split(':').pop())).toEqual(added.map(() => first.body.id));
    expect(added.length).toBeGreaterThan(0);
    // The three owners withdraw; the last one's DELETE cancels the run.
    for (const apiKey of [BOB, CAROL, ALICE]) expect((await request(`${api.url}/v1/jobs/${first.body.id}`, { method: 'DELETE', headers: as(apiKey) })).status).toBeLessThan(300);
  }, 30_000);

  it('the last owner to cancel cancels the run', async () => {
    const { body } = await submit(api.url, 'fibonacci', { n: 44 }, { headers: as(ALICE) });
    await waitFor(async () => (await getJob(api.url, body.id, as(ALICE))).body.status === 'active', { what: 'the job running' });
    const res = await request(`${api.url}/v1/jobs/${body.id}`, { method: 'DELETE', headers: as(ALICE) });
    const final = res.status === 200 ? res.body : (await waitFor(async () => ((await getJob(api.url, body.id, as(ALICE))).body.status === 'cancelled' ? (await getJob(api.url, body.id, as(ALICE))).body : undefined), { what: 'cancelled' }));
    expect(final).toMatchObject({ status: 'cancelled', error: { code: 'JOB_CANCELLED' } });
    expect(final.error.message).not.toMatch(/^Withdrawn/);
  }, 60_000);

  it('an invalid batch item nested 200,000 levels deep fails alone under an Idempotency-Key too, and its retry is a replay', async () => {
    let deep: unknown = 1;
    for (let i = 0; i < 200_000; i++) deep = [deep];
    const body = JSON.stringify({ items: [deep, { n: 5 }] });
    expect(body.length).toBeGreaterThan(400_000);
    const headers = { ...as(ALICE), 'content-type': 'application/json', 'idempotency-key': `deep-${key().slice(0, 8)}`, prefer: 'wait=10' };
    const send = () => request(`${api.url}/v1/jobs/fibonacci/batch`, { method: 'POST', headers, body });
    const first = await send();
    expect({ status: first.status, items: first.body.items?.map((item: any) => item.problem?.code ?? item.job.result) }).toEqual({ status: 200, items: ['INVALID_INPUT', 5] });
    const retry = await send();
    expect(retry.body.items?.map((item: any) => item.problem?.code ?? item.job.id)).toEqual(['INVALID_INPUT', first.body.items[1].job.id]);
  });

  it('a caller that withdrew sees its own cancelled view on every path: its open event stream, retries under its Idempotency-Keys', async () => {
    const input = { n: 43 }; // seconds (or a JOB_TIMEOUT on a loaded host: either ends it); cancelled before, so not cached
    const order = { 'idempotency-key': `order-${key().slice(0, 8)}` };
    const batchOrder = { 'idempotency-key': `batch-${key().slice(0, 8)}` };
    const submitBatch = (wait: number) =>
      request(`${api.url}/v1/jobs/fibonacci/batch`, { method: 'POST', json: { items: [input] }, headers: { ...as(ALICE), ...batchOrder, prefer: `wait=${wait}` } });
    const alice = await submit(api.url, 'fibonacci', input, { headers: { ...as(ALICE), ...order } });
    const id = alice.body.id;
    const joined = [await submitBatch(0), await submit(api.url, 'fibonacci', input, { headers: as(BOB) }), await submit(api.url, 'fibonacci', input, { headers: as(CAROL) })];
    expect(joined.map((res) => res.body.id ?? res.body.items?.[0]?.job?.id)).toEqual([id, id, id]);
    // Bob's stream is open (its headers are sent once his ownership is checked) before he withdraws.
    const stream = await fetch(`${api.url}/v1/jobs/${id}/events`, { headers: as(BOB) });
    expect(stream.status).toBe(200);
    const bobEvents = stream.text();
    for (const apiKey of [BOB, ALICE]) {
      expect((await request(`${api.url}/v1/jobs/${id}`, { method: 'DELETE', headers: as(apiKey) })).body).toMatchObject({ status: 'cancelled' });
    }
    expect((await getJob(api.url, id, as(ALICE))).status).toBe(404);
    // The run goes on for carol, the last owner, to its end.
    const carol = await readEvents(`${api.url}/v1/jobs/${id}/events`, 80_000, as(CAROL));
    expect(carol.at(-1)).toMatchObject({ event: expect.stringMatching(/^(completed|failed)$/), data: { id } });
    const bobs = await bobEvents;
    expect(bobs).toMatch(/event: cancelled\ndata: {[^\n]*"Withdrawn/);
    expect(bobs).not.toMatch(/event: (completed|failed)|433494437/);
    // Alice's retries under her keys, waiting: her own cancelled view, without the result.
    const withdrawn = { id, status: 'cancelled', error: { code: 'JOB_CANCELLED', message: expect.stringMatching(/^Withdrawn/) } };
    const retry = await submit(api.url, 'fibonacci', input, { headers: { ...as(ALICE), ...order }, wait: 20 });
    expect(retry.body).toMatchObject(withdrawn);
    expect(retry.body.result).toBeUndefined();
    const batchRetry = await submitBatch(20);
    expect(batchRetry.body.items[0].job).toMatchObject(withdrawn);
    expect(batchRetry.body.items[0].job.result).toBeUndefined();
  }, 120_000);
});

/**
 * Apps with API keys and the test job types (registered only with CHAOS_JOBS, so NODE_ENV=test): each
 * caller lists its own jobs (of test types, so removing the examples leaves the suite whole), a
 * `share: 'caller'` input is never confirmed to another key, and each key gets its fair share of the
 * queue (libs/queue's fair-share.ts): carol may run one job at once and have three waiting.
 */
describe('tenancy: keys with the test job types', () => {
  const env = stackEnv('tenancy-share', {
    API_KEYS: `alice=${ALICE},bob=${BOB},carol=${CAROL},dave=${DAVE}`,
    ADMIN_API_KEYS: `ops=${ADMIN}`,
    CALLER_LIMITS: 'carol:concurrency=1,carol:queued=3',
    // A timed-out job in seconds, a killed worker's job taken back in seconds.
    JOB_TIMEOUT_MS: '4000',
    JOB_LOCK_MS: '2000',
  });
  let api: AppProcess | undefined;
  let worker: AppProcess | undefined;
  let redis: IORedis;
  let queue: Queue<JobData, unknown, string>;

  beforeAll(async () => {
    redis = new IORedis(env.REDIS_URL!, { maxRetriesPerRequest: null });
    queue = new Queue<JobData, unknown, string>('default', { connection: redis, prefix: queuePrefix(env.REDIS_PREFIX!, 'default') });
    [api, worker] = await startAll([startApp('api', env), startApp('worker', env)]);
  });

  afterAll(async () => {
    await Promise.all([api?.stop(), worker?.stop()]);
    await queue?.close();
    redis?.disconnect();
  });

  /** Every caller's share of the default queue, once each one's waiting and running counts are back to 0. */
  const drained = async (): Promise<CallerShare[]> => {
    let shares: CallerShare[] = [];
    await waitFor(async () => {
      shares = await callerShares(redis, env.REDIS_PREFIX!, 'default');
      return shares.every((share) => share.waiting === 0 && share.running === 0);
    }, { timeoutMs: 20_000, what: "every caller's waiting and running counts back to 0" });
    return shares;
  };

  /** The BullMQ jobs of `ids`, once all have finished. */
  const finished = async (ids: readonly string[]): Promise<Array<Job<JobData>>> => {
    let jobs: Array<Job<JobData> | undefined> = [];
    await waitFor(async () => {
      jobs = await Promise.all(ids.map((id) => queue.getJob(id)));
      return jobs.every((job) => job?.finishedOn);
    }, { timeoutMs: 30_000, what: 'the jobs finished' });
    return jobs as Array<Job<JobData>>;
  };

  it('gives another key no cache hit and no joined run', async () => {
    const url = api!.url;
    const secret = { text: 'hunter2' };
    const alice = await submit(url, 'private-echo', secret, { headers: as(ALICE), wait: 10 });
    expect(alice.body).toMatchObject({ status: 'completed' });
    // Alice's own resubmission is answered from her cache…
    expect((await submit(url, 'private-echo', secret, { headers: as(ALICE) })).body).toMatchObject({ cached: true, id: alice.body.id });
    // …while Bob's right guess looks exactly like his wrong one: queued, a job of his own.
    const right = await submit(url, 'private-echo', secret, { headers: as(BOB) });
    const wrong = await submit(url, 'private-echo', { text: 'hunter3' }, { headers: as(BOB) });
    for (const guess of [right, wrong]) {
      expect(guess.status).toBe(202);
      expect(guess.body.cached).toBeUndefined();
      expect(guess.body.id).not.toBe(alice.body.id);
      expect(guess.body.createdAt).not.toBe(alice.body.createdAt);
    }
  });

  ifPresent('fair-share').it("fair share: one key's flood does not hold back another key's jobs, which start in turn", async () => {
    const url = api!.url;
    const spin = (tag: string) => ({ mode: 'sleep', ms: 300, tag: `${tag}-${randomBytes(4).toString('hex')}` });
    const flood = await request(`${url}/v1/jobs/chaos/batch`, { method: 'POST', json: { items: Array.from({ length: 16 }, () => spin('alice')) }, headers: as(ALICE) });
    expect(flood.status).toBe(202);
    const bobFrom = Date.now();
    const bob = await Promise.all([spin('bob'), spin('bob')].map((input) => submit(url, 'chaos', input, { headers: as(BOB) })));
    const ids = [...flood.body.items.map((item: { job: { id: string } }) => item.job.id), ...bob.map((res) => res.body.id as string)];
    const jobs = await finished(ids);
    const bobStarted = Math.max(...jobs.slice(16).map((job) => job.processedOn!));
    // With 2 threads, Bob's two jobs take the next slots in turn with Alice's: at most a round of
    // hers starts between his submission and his last start (a shared FIFO starts all 14 left).
    const aliceMeanwhile = jobs.slice(0, 16).filter((job) => job.processedOn! > bobFrom && job.processedOn! < bobStarted);
    expect(aliceMeanwhile.length).toBeLessThanOrEqual(4);
    expect(jobs.slice(0, 16).filter((job) => job.processedOn! > bobStarted).length).toBeGreaterThanOrEqual(8);
    expect((await drained()).map((share) => share.caller).sort()).toEqual(['alice', 'bob']);
  });

  /** Carol's next job runs to its end: her share was given back. */
  const nextRuns = async () => {
    const next = await submit(api!.url, 'chaos', { mode: 'ok', tag: `carol-${randomBytes(4).toString('hex')}` }, { headers: as(CAROL), wait: 20 });
    expect(next.body).toMatchObject({ status: 'completed' });
  };
  const view = async (id: string, key = CAROL) =>
    waitFor(async () => {
      const res = await getJob(api!.url, id, as(key));
      return ['completed', 'failed', 'cancelled'].includes(res.body.status) && res.body;
    }, { timeoutMs: 20_000, what: `job ${id} ended` });

  ifPresent('fair-share').it('fair share: a retry with backoff, a timeout and cancels (queued and running) give the key its share back', async () => {
    const url = api!.url;
    const tag = () => `carol-${randomBytes(4).toString('hex')}`;
    // A retry with backoff stays the key's (concurrency 1): its next job waits for the retry's end.
    const flaky = await submit(url, 'chaos', { mode: 'flaky', tag: tag() }, { headers: as(CAROL) });
    await nextRuns();
    expect(await view(flaky.body.id)).toMatchObject({ status: 'completed', attempts: 2 });
    // A timeout (JOB_TIMEOUT_MS=4000) ends the run; the next starts.
    const slow = await submit(url, 'chaos', { mode: 'sleep', ms: 8000, tag: tag() }, { headers: as(CAROL) });
    await nextRuns();
    expect(await view(slow.body.id)).toMatchObject({ status: 'failed', error: { code: 'JOB_TIMEOUT' } });
    // Cancels: of a waiting job, then of the running one.
    const running = await submit(url, 'chaos', { mode: 'sleep', ms: 10_000, tag: tag() }, { headers: as(CAROL) });
    const waiting = await submit(url, 'chaos', { mode: 'ok', tag: tag() }, { headers: as(CAROL) });
    await waitFor(async () => (await queue.getJobState(running.body.id)) === 'active', { what: 'the long job running' });
    expect((await request(`${url}/v1/jobs/${waiting.body.id}`, { method: 'DELETE', headers: as(CAROL) })).body).toMatchObject({ status: 'cancelled' });
    expect((await callerShares(redis, env.REDIS_PREFIX!, 'default')).find((share) => share.caller === 'carol')).toMatchObject({ waiting: 0, running: 1 });
    await request(`${url}/v1/jobs/${running.body.id}`, { method: 'DELETE', headers: as(CAROL) });
    expect(await view(running.body.id)).toMatchObject({ status: 'cancelled' });
    await nextRuns();
    await drained();
  });

  ifPresent('fair-share').it('fair share: a worker killed mid-job (kill -9) leaves no share taken once BullMQ takes its job back', async () => {
    const url = api!.url;
    const long = await submit(url, 'chaos', { mode: 'sleep', ms: 1500, tag: `carol-${randomBytes(4).toString('hex')}` }, { headers: as(CAROL) });
    await waitFor(async () => (await queue.getJobState(long.body.id)) === 'active', { what: 'the job running' });
    await worker!.stop('SIGKILL');
    worker = await startApp('worker', env);
    // The job stalled, BullMQ gave it to the new worker, it ran to its end; then carol's next one runs.
    expect(await view(long.body.id)).toMatchObject({ status: 'completed' });
    await nextRuns();
    await drained();
  });

  ifPresent('fair-share').it('fair share: a job parked in BullMQ whose share a failover lost runs once a worker heals the queue', async () => {
    // What a promoted replica that had the add and not the park (next in the same round trip) holds.
    const echo = allJobs.find((d) => d.name === 'echo')!;
    const inputJson = canonicalJson({ n: 1 + randomBytes(4).readUInt32BE() });
    const job = await queue.add('echo', { inputJson, version: echo.version, key: contentKey(echo, inputJson), caller: 'bob' }, { delay: PARK_DELAY_MS });
    await waitFor(async () => (await queue.getJobState(job.id!)) === 'completed', { timeoutMs: 20_000, what: 'the orphaned parked job completed' });
    await drained();
  });

  ifPresent('fair-share').it("fair share: CALLER_CONCURRENCY and CALLER_MAX_QUEUED bind that key alone", async () => {
    const url = api!.url;
    const spin = (ms = 300) => ({ mode: 'sleep', ms, tag: `carol-${randomBytes(4).toString('hex')}` });
    // One released (concurrency 1; long enough to run while the others are submitted), three
    // waiting (queued 3): the fifth is refused, to carol only.
    const accepted = [await submit(url, 'chaos', spin(3000), { headers: as(CAROL) })];
    for (let i = 0; i < 3; i++) accepted.push(await submit(url, 'chaos', spin(), { headers: as(CAROL) }));
    expect(accepted.map((res) => res.status)).toEqual([202, 202, 202, 202]);
    const refused = await submit(url, 'chaos', spin(), { headers: as(CAROL) });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(refused.headers.get('retry-after')).toBe('5');
    expect(refused.body).toMatchObject({ code: 'CALLER_BACKLOG_FULL' });
    // The gauges: carol's share, and the queue's backlog counting her parked jobs beside her running one.
    const metrics = (await request<string>(`${url}/metrics`)).body;
    expect(metrics).toContain('nest_offload_caller_jobs{queue="default",caller="carol",state="waiting"} 3');
    expect(metrics).toContain('nest_offload_caller_jobs{queue="default",caller="carol",state="running"} 1');
    expect(Number(/^nest_offload_queue_backlog\{queue="default"\} (\d+)$/m.exec(metrics)?.[1])).toBeGreaterThanOrEqual(4);
    // The admin view: the same counts, each key's limits (0: none), for admin keys only.
    const view = await request(`${url}/admin/callers`, { headers: as(ADMIN) });
    expect(view.status).toBe(200);
    expect(view.body.engaged).toBe(true);
    const shares = view.body.queues.find((queue: { queue: string }) => queue.queue === 'default').callers;
    expect(shares.map((share: { caller: string }) => share.caller)).toEqual(['alice', 'bob', 'carol', 'dave']);
    expect(shares.find((share: { caller: string }) => share.caller === 'carol')).toEqual({ caller: 'carol', waiting: 3, running: 1, limits: { concurrency: 1, maxQueued: 3 } });
    expect(shares.find((share: { caller: string }) => share.caller === 'dave').limits).toEqual({ concurrency: 0, maxQueued: 0 });
    const refusedView = await request(`${url}/admin/callers`, { headers: as(CAROL) });
    expect(refusedView.status).toBe(403);
    expect(refusedView.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(refusedView.body).toMatchObject({ code: 'FORBIDDEN' });
    expect((await submit(url, 'chaos', spin(), { headers: as(ALICE) })).status).toBe(202);
    const jobs = await finished(accepted.map((res) => res.body.id as string));
    // Never two at once: each starts after the one before it finished.
    const runs = jobs.map((job) => [job.processedOn!, job.finishedOn!]).sort((a, b) => a[0] - b[0]);
    for (let i = 1; i < runs.length; i++) expect(runs[i][0]).toBeGreaterThanOrEqual(runs[i - 1][1]);
    await drained();
  });

  describe('listing (GET /v1/jobs, GET /admin/jobs) and tags', () => {
    const run = randomBytes(4).toString('hex');
    // Distinct jobs of a test type on the `heavy` queue that take no time (so the listing merges two
    // queues' indexes); a test type, so the README's removal of the examples leaves this suite whole.
    const spin = (i: number) => ({ ms: 0, tag: `t${1000 + i}` });
    const list = async (path: string, apiKey: string) => {
      const res = await request(`${api!.url}${path}`, { headers: as(apiKey) });
      expect(res.status).toBe(200);
      return res.body as { items: Array<{ id: string; type: string; status: string; tags?: string[] }>; next: string | null };
    };
    const ids = async (path: string, apiKey: string) => (await list(path, apiKey)).items.map((item) => item.id);

    it('shows the caller its own tags (Job-Tags) and refuses malformed ones with a 400 problem, queueing nothing', async () => {
      for (const header of ['a b', 'ok,', 'é', 't'.repeat(65), Array.from({ length: 11 }, (_, i) => `t${i}`).join(',')]) {
        const refused = await submit(api!.url, 'spin', spin(0), { headers: { ...as(DAVE), 'job-tags': header } });
        expect(refused.status).toBe(400);
        expect(refused.headers.get('content-type')).toContain('application/problem+json');
        expect(refused.body).toMatchObject({ code: 'INVALID_HEADER', detail: expect.stringMatching(/^Job-Tags: /) });
      }
      expect((await list('/v1/jobs', DAVE)).items).toEqual([]);

      const alice = await submit(api!.url, 'spin', spin(1), { headers: { ...as(ALICE), 'job-tags': 'order:42, export' }, wait: 10 });
      expect(alice.body).toMatchObject({ status: 'completed', tags: ['order:42', 'export'] });
      // Bob gets the same job (a cache hit) with tags of his own; neither sees the other's.
      const bob = await submit(api!.url, 'spin', spin(1), { headers: { ...as(BOB), 'job-tags': 'mine' } });
      expect(bob.body).toMatchObject({ id: alice.body.id, tags: ['mine'] });
      expect((await getJob(api!.url, alice.body.id, as(ALICE))).body.tags).toEqual(['order:42', 'export']);
      expect((await getJob(api!.url, alice.body.id, as(BOB))).body.tags).toEqual(['mine']);
      expect(await ids('/v1/jobs?tag=order:42', ALICE)).toEqual([alice.body.id]);
      expect(await ids('/v1/jobs?tag=order:42', BOB)).toEqual([]);
      expect((await list('/v1/jobs?tag=mine', BOB)).items).toMatchObject([{ id: alice.body.id, tags: ['mine'] }]);
      // An admin sees every caller's tags, and filters on any of them.
      expect((await list(`/admin/jobs?tag=mine`, ADMIN)).items).toMatchObject([{ id: alice.body.id, tags: expect.arrayContaining(['order:42', 'export', 'mine']) }]);
      // The event stream's final event shows the caller's tags as its view does.
      const streamed = await submit(api!.url, 'spin', { ms: 300, tag: `stream-${run}` }, { headers: { ...as(ALICE), 'job-tags': 'streamed' } });
      const events = await readEvents(`${api!.url}/v1/jobs/${streamed.body.id}/events`, 20_000, as(ALICE));
      expect(events.at(-1)).toMatchObject({ event: 'completed', data: { id: streamed.body.id, tags: ['streamed'] } });
    });

    it("lists only the caller's own jobs; an admin key lists everyone's, or one caller's", async () => {
      let owned = 0;
      const mine = async (apiKey: string, n: number) => {
        const out: string[] = [];
        for (let i = 0; i < n; i++) out.push((await submit(api!.url, 'spin', spin(10 + owned++), { headers: as(apiKey) })).body.id);
        return out.reverse(); // newest first
      };
      const alice = await mine(ALICE, 3);
      const bob = await mine(BOB, 2);
      const bobs = await ids('/v1/jobs?limit=100', BOB);
      expect(bobs.slice(0, 2)).toEqual(bob);
      expect(bobs.filter((id) => alice.includes(id))).toEqual([]);
      expect((await ids('/v1/jobs?limit=100', ALICE)).slice(0, 3)).toEqual(alice);
      const all = await ids('/admin/jobs?limit=100', ADMIN);
      expect(all.slice(0, 5)).toEqual([...bob, ...alice]);
      const alices = await ids('/admin/jobs?limit=100&caller=alice', ADMIN);
      expect(alices.slice(0, 3)).toEqual(alice);
      expect(alices.filter((id) => bob.includes(id))).toEqual([]);
      // A client key may not list others' jobs; no key, nothing.
      expect((await request(`${api!.url}/admin/jobs`, { headers: as(ALICE) })).status).toBe(403);
      expect((await request(`${api!.url}/admin/jobs`)).status).toBe(401);
      expect((await request(`${api!.url}/v1/jobs`)).status).toBe(401);
    });

    it('pages newest first with a cursor that neither repeats nor skips while jobs are added', async () => {
      // One batch: 23 jobs added in one addBulk, most in the same millisecond (ties broken by id).
      const batch = await request(`${api!.url}/v1/jobs/spin/batch`, {
        method: 'POST',
        headers: { ...as(ALICE), 'job-tags': `page-${run}` },
        json: { items: Array.from({ length: 23 }, (_, i) => spin(100 + i)) },
      });
      expect(batch.status).toBeLessThan(300);
      const expected = new Set<string>(batch.body.items.map((item: { job: { id: string } }) => item.job.id));
      const seen: string[] = [];
      let cursor: string | null = null;
      let added = 0;
      do {
        const page = await list(`/v1/jobs?tag=page-${run}&limit=5${cursor ? `&cursor=${cursor}` : ''}`, ALICE);
        expect(page.items.length).toBeLessThanOrEqual(5);
        seen.push(...page.items.map((item) => item.id));
        cursor = page.next;
        // Newer jobs with the same tag arrive between pages: they sort before the cursor, never after it.
        await submit(api!.url, 'spin', spin(200 + added++), { headers: { ...as(ALICE), 'job-tags': `page-${run}` } });
      } while (cursor);
      expect(new Set(seen).size).toBe(seen.length);
      expect(new Set(seen)).toEqual(expected);
      expect(added).toBeGreaterThanOrEqual(5);
      // The first page now starts with the latest of them.
      expect((await list(`/v1/jobs?tag=page-${run}&limit=${added}`, ALICE)).items.every((item) => !expected.has(item.id))).toBe(true);
    });

    it('filters on type, status and time, and refuses a malformed query with a 400 problem', async () => {
      const before = new Date().toISOString();
      const done = await submit(api!.url, 'spin', spin(300), { headers: as(DAVE), wait: 10 });
      const queued = await submit(api!.url, 'fibonacci', { n: 45 }, { headers: as(DAVE) }); // runs for seconds
      expect(await ids('/v1/jobs?type=spin', DAVE)).toEqual([done.body.id]);
      expect(await ids('/v1/jobs?type=fibonacci', DAVE)).toEqual([queued.body.id]);
      expect(await ids('/v1/jobs?status=completed', DAVE)).toEqual([done.body.id]);
      expect(await ids(`/v1/jobs?since=${before}`, DAVE)).toEqual([queued.body.id, done.body.id]);
      expect(await ids(`/v1/jobs?until=${before}`, DAVE)).toEqual([]);
      expect(await ids(`/v1/jobs?since=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`, DAVE)).toEqual([]);
      await request(`${api!.url}/v1/jobs/${queued.body.id}`, { method: 'DELETE', headers: as(DAVE) });
      for (const query of ['limit=0', 'status=done', 'since=yesterday', 'type=nope', 'cursor=abc', 'tag=a%20b']) {
        const res = await request(`${api!.url}/v1/jobs?${query}`, { headers: as(DAVE) });
        expect(res.status).toBe(400);
        expect(res.body).toMatchObject({ code: 'INVALID_QUERY', detail: expect.stringMatching(new RegExp(`^${query.split('=')[0]}: `)) });
      }
    });
  });
});

/**
 * Webhooks name the caller: the signed body carries the API key's name, and WEBHOOK_ALLOWED_HOSTS
 * entries can be scoped to one key. (NODE_ENV=test: production allows https callbacks only, and the
 * receivers here are plain http on loopback.)
 */
ifPresent('webhooks').describe('tenancy: webhooks', () => {
  const secret = `whsec_${randomBytes(32).toString('base64')}`;
  let alicesHooks: WebhookReceiver;
  let sharedHooks: WebhookReceiver;
  let api: AppProcess | undefined;
  let worker: AppProcess | undefined;

  beforeAll(async () => {
    [alicesHooks, sharedHooks] = await Promise.all([WebhookReceiver.start(secret), WebhookReceiver.start(secret)]);
    const env = stackEnv('tenancy-hooks', {
      API_KEYS: `alice=${ALICE},bob=${BOB}`,
      WEBHOOK_SECRET: secret,
      WEBHOOK_ALLOWED_HOSTS: `alice=127.0.0.1:${alicesHooks.port},127.0.0.1:${sharedHooks.port}`,
      WEBHOOK_ALLOW_PRIVATE_ADDRESSES: 'true',
    });
    [api, worker] = await startAll([startApp('api', env), startApp('worker', env)]);
  });

  afterAll(async () => {
    await Promise.all([api?.stop(), worker?.stop(), alicesHooks?.stop(), sharedHooks?.stop()]);
  });

  it('signs the caller\'s key name into each callback, and keeps a key-scoped receiver to its key', async () => {
    const url = api!.url;
    const refused = await submit(url, 'fibonacci', { n: 30 }, { headers: { ...as(BOB), 'callback-url': `http://127.0.0.1:${alicesHooks.port}/hooks` } });
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ code: 'INVALID_CALLBACK_URL', detail: expect.stringContaining('for key "bob"') });

    const input = { n: 40 }; // about a second: Bob joins Alice's run
    const alice = await submit(url, 'fibonacci', input, { headers: { ...as(ALICE), 'callback-url': `http://127.0.0.1:${alicesHooks.port}/a`, 'job-tags': 'invoice:7' } });
    const bob = await submit(url, 'fibonacci', input, { headers: { ...as(BOB), 'callback-url': `http://127.0.0.1:${sharedHooks.port}/b`, 'job-tags': 'b-side' } });
    expect(bob.body.id).toBe(alice.body.id);
    await waitFor(() => alicesHooks.accepted().length === 1 && sharedHooks.accepted().length === 1, { timeoutMs: 30_000, what: 'one callback each' });
    // Each callback carries its caller's own tags (Job-Tags), as that caller's view shows them.
    expect(alicesHooks.accepted()[0].event).toMatchObject({ type: 'job.completed', caller: 'alice', data: { id: alice.body.id, tags: ['invoice:7'] } });
    expect(sharedHooks.accepted()[0].event).toMatchObject({ type: 'job.completed', caller: 'bob', data: { id: alice.body.id, tags: ['b-side'] } });
  }, 60_000);
});
