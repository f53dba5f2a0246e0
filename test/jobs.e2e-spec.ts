import { Queue } from 'bullmq';
import IORedis from 'ioredis';
import { ResultCache } from '@app/cache';
import { allJobs, canonicalJson, contentKey, type JobDefinition, SILENT_LOG } from '@app/jobs';
import { METRIC_PREFIX } from '@app/metrics';
import { bullKey, type JobData, queueKeys, queuePrefix } from '@app/queue';
import { randomBytes, randomUUID } from 'node:crypto';
import { AppProcess, startStack, stackEnv } from './support/apps';
import { present } from './support/capabilities';
import { getJob, readEvents, request, submit } from './support/http';
import { waitFor } from './support/wait';
import { WebhookReceiver } from './support/webhook-receiver';

/** The HTTP contract of a job's life: submit, wait, read, results of every registered type, cache. */
describe('jobs API', () => {
  let api: AppProcess;
  let worker: AppProcess;
  let stop: () => Promise<void>;
  let receiver: WebhookReceiver | undefined;
  const secret = `whsec_${randomBytes(32).toString('base64')}`;
  let env: ReturnType<typeof stackEnv>;

  beforeAll(async () => {
    receiver = present('webhooks') ? await WebhookReceiver.start(secret) : undefined;
    env = stackEnv('jobs', receiver && { WEBHOOK_SECRET: secret, WEBHOOK_ALLOWED_HOSTS: `127.0.0.1:${receiver.port}` });
    ({ api, worker, stop } = await startStack(env));
  });
  afterAll(async () => {
    await stop?.();
    await receiver?.stop();
  });

  const executions = (type: string) => worker.metric(`${METRIC_PREFIX}jobs_finished_total`, { type, outcome: 'completed' });

  it('lists every job type with its schema and limits', async () => {
    const { status, body } = await request(`${api.url}/v1/job-types`);
    expect(status).toBe(200);
    // why from the registry: a type added with `npm run new:job` is listed without editing this test.
    expect(body.map((t: { type: string }) => t.type)).toEqual(allJobs.map((def) => def.name));
    const fib = body.find((t: { type: string }) => t.type === 'fibonacci');
    expect(fib).toMatchObject({ version: 1, timeoutMs: 30_000, cacheTtlSeconds: 3600 });
    expect(fib.inputSchema).toMatchObject({
      type: 'object',
      properties: { n: { type: 'integer', minimum: 0, maximum: 50 } },
      required: ['n'],
      additionalProperties: false,
    });
    expect(typeof fib.description).toBe('string');
  });

  it('accepts a job with 202 and a Location, then serves its view', async () => {
    const res = await submit(api.url, 'fibonacci', { n: 25 });
    expect(res.status).toBe(202);
    expect(res.headers.get('location')).toBe(`/v1/jobs/${res.body.id}`);
    expect(res.body).toMatchObject({ type: 'fibonacci', status: 'queued', attempts: 0 });
    expect(new Date(res.body.createdAt).toISOString()).toBe(res.body.createdAt);
    const done = await waitForStatus(api.url, res.body.id, 'completed');
    expect(done).toMatchObject({ id: res.body.id, result: 75025, attempts: 1, progress: 100 });
    expect(Date.parse(done.finishedAt)).toBeGreaterThanOrEqual(Date.parse(done.startedAt));
  });

  it('waits with Prefer: wait and answers 200 with the result', async () => {
    const res = await submit(api.url, 'fibonacci', { n: 27 }, { wait: 10 });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'completed', result: 196418 });
    expect(res.headers.get('location')).toBeNull();
    expect(res.headers.get('server-timing')).toMatch(/^validate;dur=[\d.]+, cache;dur=[\d.]+, enqueue;dur=[\d.]+, wait;dur=[\d.]+$/);
  });

  it('gives every caller that waits a falsy result as it is: Prefer: wait, a batch, the event stream, a webhook', async () => {
    // The case: fibonacci(0) is 0.
    expect((await submit(api.url, 'fibonacci', { n: 0 }, { wait: 10 })).body).toEqual(expect.objectContaining({ status: 'completed', result: 0 }));
    for (const [i, result] of [0, false, '', null].entries()) {
      const input = (path: string, ms = 0) => ({ mode: 'spin', ms, result, tag: `falsy-${i}-${path}` });
      const single = await submit(api.url, 'chaos', input('wait'), { wait: 10 });
      expect({ result, view: single.body }).toEqual({ result, view: expect.objectContaining({ status: 'completed', result }) });
      if (present('batch')) {
        const batch = await request(`${api.url}/v1/jobs/chaos/batch`, { method: 'POST', json: { items: [input('batch')] }, headers: { prefer: 'wait=10' } });
        expect({ result, view: batch.body.items[0].job }).toEqual({ result, view: expect.objectContaining({ status: 'completed', result }) });
      }
      // A stream open before the job ends gets its final event from the notice, not from a read.
      const streamed = await submit(api.url, 'chaos', input('stream', 800));
      const events = await readEvents(`${api.url}/v1/jobs/${streamed.body.id}/events`);
      expect({ result, final: events.at(-1) }).toEqual({ result, final: { event: 'completed', data: expect.objectContaining({ result }) } });
      if (receiver) {
        const hooked = await submit(api.url, 'chaos', input('webhook'), { headers: { 'callback-url': `http://127.0.0.1:${receiver.port}/falsy` } });
        const delivered = await waitFor(() => receiver!.received.find((r) => r.event?.data?.id === hooked.body.id), { what: `the webhook of ${JSON.stringify(result)}` });
        expect({ result, data: delivered.event!.data }).toEqual({ result, data: expect.objectContaining({ status: 'completed', result }) });
      }
    }
  });

  it('answers 202 when the job outlasts Prefer: wait', async () => {
    const started = Date.now();
    const res = await submit(api.url, 'chaos', { mode: 'sleep', ms: 3000, tag: 'outlast' }, { wait: 1 });
    expect(res.status).toBe(202);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    expect(['queued', 'active']).toContain(res.body.status);
  });

  it("runs every type's declared examples end to end, with the result its run gives", async () => {
    // why from the registry: what each type computes is its own spec's business (libs/jobs/src/*.job.spec.ts);
    // here every type, a new one or an example left in, must come through the API, queue and pool intact.
    const ctx = { attempt: 1, progress: () => undefined, log: SILENT_LOG };
    const defs: readonly JobDefinition[] = allJobs;
    // why not the types that take files: their submissions are multipart (test/files.e2e-spec.ts).
    expect(defs.filter((def) => def.examples.length === 0 && Object.keys(def.files).length === 0).map((def) => def.name)).toEqual([]);
    const cases = defs.flatMap((def) => def.examples.map((example) => ({ def, example })));
    const replies = await Promise.all(cases.map(({ def, example }) => submit(api.url, def.name, example, { wait: 30 })));
    for (const [i, { def, example }] of cases.entries()) {
      const expected = await def.run(def.input.parse(example), ctx);
      expect([def.name, replies[i].status, replies[i].body.result]).toEqual([def.name, 200, expected]);
    }
  });

  it('serves a repeated input from the cache without running it again', async () => {
    const first = await submit(api.url, 'fibonacci', { n: 29 }, { wait: 10 });
    expect(first.body.status).toBe('completed');
    const before = await executions('fibonacci');
    const second = await submit(api.url, 'fibonacci', { n: 29 });
    expect(second.status).toBe(200);
    expect(second.body).toMatchObject({ id: first.body.id, status: 'completed', cached: true, result: 514229 });
    expect(await executions('fibonacci')).toBe(before);
  });

  it('serves a cached result by id after BullMQ has dropped the job, when the job was kept less long than its result', async () => {
    const redis = new IORedis(env.REDIS_URL!);
    const queue = new Queue<JobData, unknown, string>('default', { connection: redis, prefix: queuePrefix(env.REDIS_PREFIX!, 'default') });
    try {
      // Added as a script (or an API with JOB_RETENTION_SECONDS below the type's cache TTL) would: kept 60 s, cached for an hour.
      const added = await queue.add('fibonacci', { inputJson: '{"n":21}', version: 1 }, { jobId: randomUUID(), removeOnComplete: { age: 60 } });
      await waitFor(async () => (await getJob(api.url, added.id!)).body.status === 'completed', { what: 'the job completed' });
      // What the job's retention does eventually: BullMQ removes the finished job.
      await redis.del(bullKey(env.REDIS_PREFIX!, 'default', added.id!));
      await redis.zrem(bullKey(env.REDIS_PREFIX!, 'default', 'completed'), added.id!);
      const res = await getJob(api.url, added.id!);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ id: added.id, status: 'completed', cached: true, result: 10946 });
    } finally {
      await queue.close();
      redis.disconnect();
    }
  });

  it('writes no id key for a result whose job BullMQ keeps as long (JOB_RETENTION_SECONDS ≥ the cache TTL)', async () => {
    const done = await submit(api.url, 'fibonacci', { n: 23 }, { wait: 10 });
    expect(done.body).toMatchObject({ status: 'completed', result: 28657 });
    const redis = new IORedis(env.REDIS_URL!);
    try {
      expect(await redis.exists(queueKeys(env.REDIS_PREFIX!).cacheId(done.body.id))).toBe(0);
    } finally {
      redis.disconnect();
    }
    expect((await getJob(api.url, done.body.id)).body).toMatchObject({ id: done.body.id, status: 'completed', result: 28657 });
  });

  it('answers 404 problems for unknown ids of any shape', async () => {
    for (const id of ['nope', '00000000-0000-4000-8000-000000000000', '1', 'a'.repeat(300), '%00', '..%2F..%2Fetc', '%E0%A4%A']) {
      const res = await getJob(api.url, id);
      expect([400, 404]).toContain(res.status);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(res.body.code).toBe(res.status === 404 ? 'JOB_NOT_FOUND' : 'MALFORMED_REQUEST');
    }
  });

  it('echoes the request id and carries it into the worker log lines of the job', async () => {
    const res = await submit(api.url, 'fibonacci', { n: 22 }, { wait: 10, headers: { 'x-request-id': 'trace-me-42' } });
    expect(res.headers.get('x-request-id')).toBe('trace-me-42');
    // The worker's stdout reaches this process on its own pipe, possibly after the API's answer.
    const jobLines = await waitFor(() => {
      const lines = worker.logs.filter((l) => l.jobId === res.body.id);
      return lines.some((l) => l.msg === 'job completed') ? lines : undefined;
    }, { what: "the worker's log lines for the job" });
    expect(jobLines.map((l) => l.msg)).toEqual(expect.arrayContaining(['job started', 'job completed']));
    expect(jobLines.every((l) => l.requestId === 'trace-me-42')).toBe(true);
    await waitFor(() => api.logs.some((l) => (l.req as { id?: string })?.id === 'trace-me-42'), { what: 'the API log line' });
  });

  it("runs an inline type on the worker's event loop: its log line from thread 0, and a run past its timeout fails once, replacing no thread", async () => {
    const replaced = () => worker.metric(`${METRIC_PREFIX}pool_thread_replacements_total`, { reason: 'timeout' });
    const replacedBefore = await replaced();
    const res = await submit(api.url, 'inline-echo', { n: 5 }, { wait: 10, headers: { 'x-request-id': 'inline-5' } });
    expect(res.body).toMatchObject({ status: 'completed', result: { n: 5, mainThread: true } });
    const line = await waitFor(() => worker.logs.find((l) => l.jobId === res.body.id && l.msg === 'inline-echo ran'), { what: "the job's own log line" });
    expect(line).toMatchObject({ threadId: 0, requestId: 'inline-5', n: 5 });

    const slow = await submit(api.url, 'inline-echo', { n: 6, spinMs: 80 }, { wait: 10 });
    expect(slow.body).toMatchObject({ status: 'failed', attempts: 1, error: { code: 'JOB_TIMEOUT', message: expect.stringMatching(/longer than its 50 ms/) } });
    expect(await replaced()).toBe(replacedBefore);
    expect((await submit(api.url, 'inline-echo', { n: 7 }, { wait: 10 })).body).toMatchObject({ status: 'completed', result: { n: 7, mainThread: true } });
  });

  it("ends an inline type's asynchronous run cancelled by a DELETE that came while it ran, once it returns", async () => {
    const { body } = await submit(api.url, 'inline-echo', { n: 8, waitMs: 1500 });
    await waitForStatus(api.url, body.id, 'active');
    const res = await request(`${api.url}/v1/jobs/${body.id}`, { method: 'DELETE' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: body.id, status: 'cancelled', error: { code: 'JOB_CANCELLED', message: 'cancelled while running' } });
  });

  it("answers a job whose result got cached after the API looked without running it; an inline type's job just runs", async () => {
    const redis = new IORedis(env.REDIS_URL!, { maxRetriesPerRequest: null });
    const queue = new Queue<JobData, unknown, string>('default', { connection: redis, prefix: queuePrefix(env.REDIS_PREFIX!, 'default') });
    try {
      // What an identical job that ended between the API's look and its add leaves: a cached result.
      const planted = async (type: string, input: unknown): Promise<JobData> => {
        const def = allJobs.find((d) => d.name === type)! as JobDefinition;
        const inputJson = canonicalJson(def.input.parse(input));
        const key = contentKey(def, inputJson);
        await new ResultCache(redis, env.REDIS_PREFIX!).set(key, { id: `planted-${type}`, type, result: 'the planted result', attempts: 1, createdAt: Date.now(), finishedAt: Date.now() }, 60);
        return { inputJson, version: 1, key } as JobData;
      };
      const n = 900_000_000 + (Date.now() % 1_000_000);
      const onThread = await queue.add('echo', await planted('echo', { n }));
      const inline = await queue.add('inline-echo', await planted('inline-echo', { n }));
      const finished = async (id: string) => {
        await waitFor(async () => (await queue.getJobState(id)) === 'completed', { what: `job ${id} to complete` });
        return (await queue.getJob(id))!.returnvalue;
      };
      expect(await finished(onThread.id!)).toBe('the planted result');
      // why it runs: running a sub-millisecond job again costs less than looking the cache up before every one.
      expect(await finished(inline.id!)).toEqual({ n, mainThread: true });
    } finally {
      await queue.close();
      redis.disconnect();
    }
  });

  it('reports liveness and readiness on both apps', async () => {
    for (const app of [api, worker]) {
      expect((await request(`${app.url}/health/live`)).status).toBe(200);
      const ready = await request(`${app.url}/health/ready`);
      expect(ready.status).toBe(200);
      expect(ready.body.status).toBe('ok');
    }
  });
});

export async function waitForStatus(api: string, id: string, status: string, timeoutMs = 20_000): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { body } = await getJob(api, id);
    if (body.status === status) return body;
    if (Date.now() > deadline) throw new Error(`job ${id} is ${body.status}, not ${status}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
