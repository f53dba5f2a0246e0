import { randomBytes } from 'node:crypto';
import IORedis from 'ioredis';
import { allJobs, canonicalJson } from '@app/jobs';
import { childJobId, queueKeys } from '@app/queue';
import { recordDigest, requestFingerprint } from '../apps/api/src/idempotency/idempotency-key';
import { AppProcess, startApp, startStack, stackEnv } from './support/apps';
import { ifPresent } from './support/capabilities';
import { Reply, request, submit } from './support/http';
import { waitFor } from './support/wait';

const WEB = randomBytes(32).toString('hex');
const OTHER = randomBytes(32).toString('hex');
const chaosInput = allJobs.find((def) => def.name === 'chaos')!.input;

/** Idempotency-Key on POST /v1/jobs/{type}, across two API replicas and a worker, with API keys on. */
describe('Idempotency-Key', () => {
  let api: AppProcess;
  let otherApi: AppProcess; // a second API replica on the same Redis
  let worker: AppProcess;
  let stop: () => Promise<void>;
  let redis: IORedis;
  const env = stackEnv('idempotency', { API_KEYS: `web=${WEB},other=${OTHER}`, IDEMPOTENCY_TTL_SECONDS: '600' });
  const keys = queueKeys(env.REDIS_PREFIX!);

  beforeAll(async () => {
    ({ api, worker, stop } = await startStack(env));
    otherApi = await startApp('api', env);
    redis = new IORedis(env.REDIS_URL!);
  });
  afterAll(async () => {
    redis?.disconnect();
    await Promise.all([stop(), otherApi?.stop()]);
  });

  let n = 0;
  const fresh = (what: string) => `${what}-${process.pid}-${++n}`;
  const post = (app: AppProcess, key: string | undefined, input: unknown, options: { apiKey?: string; wait?: number; type?: string } = {}): Promise<Reply> => {
    const headers: Record<string, string> = { authorization: `Bearer ${options.apiKey ?? WEB}` };
    if (key !== undefined) headers['idempotency-key'] = key;
    return submit(app.url, options.type ?? 'chaos', input, { headers, wait: options.wait });
  };
  const executions = () => worker.metric('nest_offload_jobs_finished_total', { type: 'chaos', outcome: 'completed' });
  const read = (id: string) => request(`${api.url}/v1/jobs/${id}`, { headers: { authorization: `Bearer ${WEB}` } });
  const finished = (id: string) => waitFor(async () => ['completed', 'failed'].includes((await read(id)).body.status), { timeoutMs: 20_000, what: `job ${id} to finish` });
  /** Where the API keeps `key`'s record for the `web` caller. */
  const recordKey = (key: string) => keys.idempotency(recordDigest('key:web', key.replace(/^"|"$/g, '')));

  it('gives one job for one key retried on two replicas at once and later, also for a type with caching off', async () => {
    const key = `"${fresh('order')}"`;
    const input = { mode: 'spin', ms: 300, tag: fresh('same') };
    const before = await executions();
    const replies = await Promise.all(Array.from({ length: 12 }, (_, i) => post(i % 2 ? otherApi : api, key, input)));
    expect(replies.map((r) => r.status).every((s) => s === 202 || s === 200)).toBe(true);
    const ids = new Set(replies.map((r) => r.body.id));
    expect(ids.size).toBe(1);
    const [id] = ids;
    expect(replies.find((r) => r.status === 202)?.headers.get('location')).toBe(`/v1/jobs/${id}`);
    await finished(id);
    // Retries after it finished, on either replica, with and without Prefer: wait.
    for (const app of [api, otherApi]) {
      const again = await post(app, key, input, { wait: 5 });
      expect(again.status).toBe(200);
      expect(again.body).toMatchObject({ id, status: 'completed', result: { mode: 'spin' } });
      expect((await post(app, key, input)).body.id).toBe(id);
    }
    expect((await executions()) - before).toBe(1);
    // Without the key the same input runs again (chaos has caching off): the key is what made it once.
    const unkeyed = await post(api, undefined, input, { wait: 5 });
    expect(unkeyed.body.id).not.toBe(id);
  });

  it('refuses the same key with another body or type with 422 naming the conflict', async () => {
    const key = `"${fresh('conflict')}"`;
    const first = await post(api, key, { mode: 'ok', tag: 'first' });
    expect(first.status).toBe(202);
    for (const [app, input, type] of [
      [otherApi, { mode: 'ok', tag: 'second' }, 'chaos'],
      [api, { n: 10 }, 'fibonacci'],
    ] as const) {
      const res = await post(app, key, input, { type });
      expect(res.status).toBe(422);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(res.body).toMatchObject({ code: 'IDEMPOTENCY_KEY_CONFLICT', status: 422 });
      expect(res.body.detail).toContain(key);
    }
    // The same body, with keys in another order and its default spelled out, is the same request.
    expect((await post(otherApi, key, { tag: 'first', ms: 0, mode: 'ok' })).body.id).toBe(first.body.id);
  });

  it('scopes keys to the caller: another API key with the same key gets its own job', async () => {
    const key = `"${fresh('scoped')}"`;
    const input = { mode: 'ok', tag: fresh('scoped') };
    const mine = await post(api, key, input, { wait: 5 });
    const theirs = await post(otherApi, key, input, { apiKey: OTHER, wait: 5 });
    expect(mine.body.status).toBe('completed');
    expect(theirs.body.status).toBe('completed');
    expect(theirs.body.id).not.toBe(mine.body.id);
    expect((await post(otherApi, key, input, { apiKey: OTHER })).body.id).toBe(theirs.body.id);
  });

  it('answers 400 to malformed keys and enqueues nothing', async () => {
    const before = await worker.metric('nest_offload_jobs_finished_total', { type: 'chaos' });
    for (const key of ['""', '"unterminated', '"a", "b"', 'two words', `"${'k'.repeat(256)}"`, '"tab\tinside"']) {
      const res = await post(api, key, { mode: 'ok', tag: fresh('malformed') });
      expect({ key, status: res.status, code: res.body.code }).toEqual({ key, status: 400, code: 'INVALID_IDEMPOTENCY_KEY' });
    }
    await new Promise((r) => setTimeout(r, 300));
    expect(await worker.metric('nest_offload_jobs_finished_total', { type: 'chaos' })).toBe(before);
  });

  it('does not spend a key on a request that fails validation', async () => {
    const key = `"${fresh('invalid-first')}"`;
    expect((await post(api, key, { mode: 'nope' })).status).toBe(400);
    expect((await post(api, key, { mode: 'ok', tag: fresh('valid-after') })).status).toBe(202);
  });

  it('keeps the key for IDEMPOTENCY_TTL_SECONDS, then runs the request afresh', async () => {
    const key = fresh('ttl');
    const input = { mode: 'ok', tag: fresh('ttl') };
    const first = await post(api, key, input, { wait: 5 });
    const ttl = await redis.ttl(recordKey(key));
    expect(ttl).toBeGreaterThan(590);
    expect(ttl).toBeLessThanOrEqual(600);
    await redis.del(recordKey(key)); // what the TTL does eventually
    const after = await post(api, key, input, { wait: 5 });
    expect(after.body.status).toBe('completed');
    expect(after.body.id).not.toBe(first.body.id);
  });

  describe('a replica that dies while it holds a key', () => {
    /** The record a replica leaves when it dies after claiming `key` for `input`, `ageMs` ago by Redis time. */
    const deadClaim = async (key: string, input: unknown, planned: string, ageMs: number, result?: string) => {
      const [seconds, micros] = await redis.time();
      // As the API fingerprints it: the validated input, defaults applied.
      const fp = requestFingerprint(['POST /v1/jobs/chaos', canonicalJson(chaosInput.parse(input))]);
      const at = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000) - ageMs;
      await redis.set(recordKey(key), JSON.stringify({ fp, planned, owner: 'a-dead-replica', at, result }), 'EX', 600);
    };

    it('before it enqueued: a retry waits out its lease, then enqueues under the id it had planned', async () => {
      const key = fresh('died-before-add');
      const input = { mode: 'ok', ms: 0, tag: fresh('died-before-add') };
      const planned = '0b9a1c2d-3e4f-4a5b-8c6d-7e8f9a0b1c2d';
      await deadClaim(key, input, planned, 60_000);
      const retry = await post(otherApi, key, input, { wait: 5 });
      expect(retry.body).toMatchObject({ id: planned, status: 'completed' });
      expect((await post(api, key, input)).body.id).toBe(planned);
    });

    it('after it enqueued: the retry joins the job it added, which does not run again', async () => {
      const key = fresh('died-after-add');
      const input = { mode: 'ok', ms: 0, tag: fresh('died-after-add') };
      const first = await post(api, key, input, { wait: 5 });
      expect(first.body.status).toBe('completed');
      const before = await executions();
      await deadClaim(key, input, first.body.id, 60_000); // its result never recorded
      for (const wait of [undefined, 5]) {
        const retry = await post(otherApi, key, input, { wait });
        expect(retry.body).toMatchObject({ id: first.body.id, status: 'completed' });
      }
      await new Promise((r) => setTimeout(r, 300));
      expect(await executions()).toBe(before);
    });

    it('while its lease runs: a retry waits for it rather than enqueueing beside it', async () => {
      const key = fresh('in-progress');
      const input = { mode: 'ok', ms: 0, tag: fresh('in-progress') };
      const planned = '1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f';
      await deadClaim(key, input, planned, 0);
      const retry = post(api, key, input);
      await new Promise((r) => setTimeout(r, 1000));
      // Still held: nothing enqueued yet. The owner records its job, and the waiting retry takes it.
      expect((await read(planned)).status).toBe(404);
      const ownersJob = await post(api, undefined, input, { wait: 5 });
      await deadClaim(key, input, planned, 0, ownersJob.body.id);
      expect((await retry).body).toMatchObject({ id: ownersJob.body.id, status: 'completed' });
    });
  });

  ifPresent('batch').describe('on a batch (POST /v1/jobs/{type}/batch)', () => {
    const echoed = (n: number) => ({ n, choice: 'a' });
    const postBatch = (key: string, items: unknown[], wait?: number): Promise<Reply> => {
      const headers: Record<string, string> = { authorization: `Bearer ${WEB}`, 'idempotency-key': key };
      if (wait !== undefined) headers.prefer = `wait=${wait}`;
      return request(`${api.url}/v1/jobs/echo/batch`, { method: 'POST', json: { items }, headers });
    };

    it("refuses a single submission's key on the batch route (422)", async () => {
      const key = `"${fresh('batch-conflict')}"`;
      expect((await post(api, key, { mode: 'ok', tag: 'single' })).status).toBe(202);
      const batch = await submit(api.url, 'chaos/batch', { items: [{ mode: 'ok', tag: 'single' }] }, { headers: { authorization: `Bearer ${WEB}`, 'idempotency-key': key } });
      expect({ status: batch.status, code: batch.body.code }).toEqual({ status: 422, code: 'IDEMPOTENCY_KEY_CONFLICT' });
    });

    it('gives a retry with the same key the same jobs and the same problems', async () => {
      const key = `"${fresh('batch-retry')}"`;
      const items = [{ n: 7_000_001 }, { n: -1 }, { n: 7_000_002 }, { n: 7_000_001 }];
      const first = await postBatch(key, items);
      const again = await postBatch(key, items, 10);
      expect(again.status).toBe(200);
      expect(again.body.items.map((e: any) => e.job?.id ?? e.problem.code)).toEqual(first.body.items.map((e: any) => e.job?.id ?? e.problem.code));
      expect(again.body.items[0].job).toMatchObject({ status: 'completed', result: echoed(7_000_001) });
      const other = await postBatch(key, [{ n: 7_000_003 }]);
      expect(other.status).toBe(422);
      expect(other.body.code).toBe('IDEMPOTENCY_KEY_CONFLICT');
    });

    it('takes over the key of a batch whose replica died, adding under the ids it had planned', async () => {
      const key = fresh('batch-died');
      // why `choice` given: each item is then its validated input, which the fingerprint is made of.
      const items = [{ n: 7_100_001, choice: 'a' }, { n: 7_100_002, choice: 'a' }, { n: 7_100_001, choice: 'a' }];
      const planned = '2d3e4f5a-6b7c-4d8e-9f0a-1b2c3d4e5f6a';
      // The claim a replica leaves when it dies before recording its jobs, a minute old by Redis time.
      const [seconds] = await redis.time();
      const fp = requestFingerprint(['POST /v1/jobs/echo/batch', ...items.map((item) => canonicalJson(item))]);
      await redis.set(recordKey(key), JSON.stringify({ fp, planned, owner: 'a-dead-replica', at: (Number(seconds) - 60) * 1000 }), 'EX', 600);
      const res = await postBatch(key, items, 10);
      expect(res.status).toBe(200);
      expect(res.body.items.map((e: { job: { id: string } }) => e.job.id)).toEqual([childJobId(planned, 0), childJobId(planned, 1), childJobId(planned, 0)]);
    });
  });
});
