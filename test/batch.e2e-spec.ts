import { AppProcess, startApp, stackEnv } from './support/apps';
import { Reply, request, submit } from './support/http';
import { rawRequest } from './support/raw-http';
import { MonitoredCommand, RedisMonitor } from './support/redis-monitor';
import { RedisServer } from './support/redis';
import { RedisProxy } from './support/redis-proxy';
import { waitFor } from './support/wait';

/** What `echo` gives for `{ n }`: its input, with the default `choice`. */
const echoed = (n: number) => ({ n, choice: 'a' });

/** POST /v1/jobs/{type}/batch with `items`; `wait` sets Prefer: wait=N. */
function postBatch(api: AppProcess, type: string, items: unknown[], options: { wait?: number; headers?: Record<string, string> } = {}): Promise<Reply> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.wait !== undefined) headers.prefer = `wait=${options.wait}`;
  return request(`${api.url}/v1/jobs/${type}/batch`, { method: 'POST', json: { items }, headers });
}

/** BullMQ's add script (addStandardJob: 9 keys, the first the queue's wait list), as MONITOR shows it. */
const isAdd = (c: MonitoredCommand) => /^eval(sha)?$/i.test(c.args[0]) && c.args[2] === '9' && c.args[3].endsWith(':wait');

type Kind = 'fresh' | 'duplicate' | 'invalid' | 'cached' | 'in-flight';

/** 1,000 items: fresh inputs, repeats of earlier ones, invalid ones, cached results and a job already queued. */
function mixedBatch(cached: number[], inFlight: number): Array<{ kind: Kind; input: unknown; of?: number }> {
  const invalid = [{ n: 0 }, { n: 'five' }, { n: 1.5 }, { m: 1 }, null, 'echo', [], { n: 1, extra: true }];
  return Array.from({ length: 1000 }, (_, i) => {
    if (i % 10 === 3) return { kind: 'invalid' as const, input: invalid[(i / 10) % invalid.length | 0] };
    if (i % 10 === 6) return { kind: 'duplicate' as const, input: { n: 3_000_000 + i - 5 }, of: i - 5 }; // i - 5 ends in 1: fresh
    if (i % 20 === 8) return { kind: 'cached' as const, input: { n: cached[(i / 20) % cached.length | 0] } };
    if (i % 100 === 99) return { kind: 'in-flight' as const, input: { n: inFlight } };
    return { kind: 'fresh' as const, input: { n: 3_000_000 + i } };
  });
}

describe('batch submissions', () => {
  describe('1,000 mixed items on a Redis of the test\'s own', () => {
    let redis: RedisServer;
    let api: AppProcess;
    let worker: AppProcess | undefined;
    let env: Record<string, string | undefined>;

    beforeAll(async () => {
      redis = await RedisServer.start();
      env = stackEnv('batch', { REDIS_URL: redis.url });
      [api, worker] = await Promise.all([startApp('api', env), startApp('worker', env)]);
    });
    afterAll(async () => {
      await Promise.all([api?.stop(), worker?.stop()]);
      await redis?.stop();
    });

    it('answers every item in order, with one add per distinct new job and a few other Redis commands', async () => {
      // Results in the cache: 10 inputs computed by a batch with Prefer: wait.
      const cached = Array.from({ length: 10 }, (_, i) => 1_000_000 + i);
      const warm = await postBatch(api, 'echo', cached.map((n) => ({ n })), { wait: 20 });
      expect(warm.status).toBe(200);
      const cachedIds = new Map<number, string>(cached.map((n, i) => [n, warm.body.items[i].job.id]));
      // Without a worker, what is queued stays queued: a job in flight that the batch must join.
      await worker!.stop();
      worker = undefined;
      const inFlight = await submit(api.url, 'echo', { n: 2_000_000 });
      expect(inFlight.status).toBe(202);

      const items = mixedBatch(cached, 2_000_000);
      const monitor = await RedisMonitor.start(redis.url);
      const res = await postBatch(api, 'echo', items.map((item) => item.input));
      const commands = await monitor.stop();

      expect(res.status).toBe(202);
      expect(res.body.items).toHaveLength(1000);
      const ids = new Set<string>();
      items.forEach(({ kind, input, of }, i) => {
        const entry = res.body.items[i];
        const at = { i, kind, input };
        switch (kind) {
          case 'invalid':
            expect({ ...at, status: entry.status, code: entry.problem?.code }).toEqual({ ...at, status: 400, code: 'INVALID_INPUT' });
            expect(entry.problem.errors.length).toBeGreaterThan(0);
            break;
          case 'cached':
            expect({ ...at, status: entry.status, job: entry.job }).toMatchObject({
              ...at,
              status: 200,
              job: { id: cachedIds.get((input as { n: number }).n), status: 'completed', cached: true, result: echoed((input as { n: number }).n) },
            });
            break;
          case 'in-flight':
            expect({ ...at, status: entry.status, id: entry.job?.id }).toEqual({ ...at, status: 202, id: inFlight.body.id });
            break;
          case 'duplicate':
            expect({ ...at, id: entry.job?.id }).toEqual({ ...at, id: res.body.items[of!].job.id });
            break;
          case 'fresh':
            expect({ ...at, status: entry.status, jobStatus: entry.job?.status }).toEqual({ ...at, status: 202, jobStatus: 'queued' });
            expect(ids.has(entry.job.id)).toBe(false);
            ids.add(entry.job.id);
        }
      });

      // Redis (MONITOR): one add per distinct new job (fresh, and the in-flight input that BullMQ
      // deduplicates), back to back; what else the request sent does not grow with the batch. That the
      // adds travel in one round trip is the proxy's test below.
      const fromApi = commands.filter((c) => c.connection === 'nest-offload:api');
      const adds = fromApi.filter(isAdd);
      expect(adds).toHaveLength(ids.size + 1);
      const firstAdd = fromApi.findIndex(isAdd);
      expect(fromApi.slice(firstAdd, firstAdd + adds.length).every(isAdd)).toBe(true);
      // The listing index (docs/api.md#listing-jobs) takes a few writes per new job, sent with the adds.
      const indexWrites = fromApi.filter((c) => !isAdd(c) && /:(listing|listing-ends|tags:)/.test(String(c.args[1] ?? '')));
      expect(indexWrites.length).toBeLessThanOrEqual(3 * (ids.size + 1));
      // why not the blob store's leases: the API's sweep of them, once a minute, is no part of the request.
      const swept = (c: MonitoredCommand) => c.args.some((arg) => String(arg).includes(':{blobs}:'));
      const others = fromApi.filter((c) => !isAdd(c) && !indexWrites.includes(c) && !swept(c)).map((c) => `${c.args[0].toLowerCase()} ${/^eval$/i.test(c.args[0]) ? '(script)' : String(c.args[1] ?? '')}`);
      // The backlog reading (BullMQ's count and fair share's parked jobs; none within 250 ms of the last
      // one), the joined job's start deadline and reading that job (its state and fields): named when
      // there are more, to say what they were.
      if (others.length > 5) throw new Error(`${others.length} other Redis commands from the API, at most 5 expected: ${others.join('; ')}`);
      // The cache: one GET per distinct valid input (memory had none of them).
      const fromCache = commands.filter((c) => c.connection === 'nest-offload:cache');
      expect(fromCache.map((c) => c.args[0].toLowerCase())).toEqual(Array(ids.size + 1 + cached.length).fill('get'));
      console.log(
        `[batch] 1,000 items → ${ids.size} new jobs, 1 joined, ${cached.length} cached inputs, 100 invalid; Redis commands from the API: ` +
          `${adds.length} adds + ${others.length} others (${others.join(', ')}), ${fromCache.length} cache GETs`,
      );

      // The same batch again joins the queued jobs and waits for all of them; a worker starts meanwhile.
      // why the pause first: so the batch has joined the jobs before any can finish and leave the queue.
      const again = postBatch(api, 'echo', items.map((item) => item.input), { wait: 30 });
      await new Promise((r) => setTimeout(r, 500));
      worker = await startApp('worker', env);
      const done = await again;
      expect(done.status).toBe(200);
      items.forEach(({ kind, input }, i) => {
        const entry = done.body.items[i];
        if (kind === 'invalid') return expect(entry.status).toBe(400);
        expect({ i, id: entry.job.id, status: entry.job.status, result: entry.job.result }).toEqual({
          i,
          id: res.body.items[i].job.id,
          status: 'completed',
          result: echoed((input as { n: number }).n),
        });
      });
      // Each distinct job ran once: what the first batch added, plus the job that was in flight.
      expect(await worker.metric('nest_offload_jobs_finished_total', { type: 'echo', outcome: 'completed' })).toBe(ids.size + 1);
    });

    it('refuses a malformed batch, too many items, an unknown type and an oversized body as a whole', async () => {
      const cases: Array<[unknown, number, string]> = [
        [[{ n: 1 }], 400, 'INVALID_INPUT'],
        [{ items: [] }, 400, 'INVALID_INPUT'],
        [{ items: Array(1001).fill({ n: 1 }) }, 400, 'INVALID_INPUT'],
        [{ items: [{ n: 1 }], extra: 1 }, 400, 'INVALID_INPUT'],
      ];
      for (const [body, status, code] of cases) {
        const res = await request(`${api.url}/v1/jobs/fibonacci/batch`, { method: 'POST', json: body });
        expect({ body: JSON.stringify(body).slice(0, 40), status: res.status, code: res.body.code }).toEqual({ body: JSON.stringify(body).slice(0, 40), status, code });
      }
      expect((await postBatch(api, 'nope', [{ n: 1 }])).status).toBe(404);
      // why the head alone: the API answers 413 to the Content-Length and closes; a client still
      // writing 6 MB then gets EPIPE instead of the answer (test/input/bad-input covers the body too).
      const huge = await rawRequest(api.port, `POST /v1/jobs/echo/batch HTTP/1.1\r\nHost: api\r\nContent-Type: application/json\r\nContent-Length: ${6 * 1024 * 1024}\r\n\r\n`);
      expect(huge.status).toBe(413);
    });

    it('costs one round trip to Redis to add 1,000 jobs (counted by a proxy that holds each reply 250 ms)', async () => {
      const proxy = await RedisProxy.start(redis.port, 250);
      const viaProxy = await startApp('api', { ...env, REDIS_URL: proxy.url });
      try {
        const flights = () => ({ queue: proxy.flights('nest-offload:api'), cache: proxy.flights('nest-offload:cache') });
        // Ready comes before the API's last start-up reads (the schedules it registers): let them pass.
        let settled = JSON.stringify(flights());
        await waitFor(async () => {
          await new Promise((resolve) => setTimeout(resolve, 800));
          const now = JSON.stringify(flights());
          return now === settled || ((settled = now), false);
        }, { what: 'the API to stop talking to Redis after start-up', timeoutMs: 15_000 });
        const before = flights();
        const res = await postBatch(viaProxy, 'echo', Array.from({ length: 1000 }, (_, i) => ({ n: 10_000 + i })));
        const after = flights();
        expect(res.body.items.filter((e: { status: number }) => e.status === 202)).toHaveLength(1000);
        // Queue Redis: the backlog count, then all 1,000 adds in one flight. Cache: 1,000 GETs in one.
        expect({ queue: after.queue - before.queue, cache: after.cache - before.cache }).toEqual({ queue: 2, cache: 1 });
      } finally {
        await viaProxy.stop();
        await proxy.stop();
      }
    });
  });

  describe('limits', () => {
    let api: AppProcess;

    beforeAll(async () => {
      // No worker: every admitted job stays waiting, so MAX_BACKLOG is reached inside one batch.
      api = await startApp('api', stackEnv('batch-limits', { MAX_BACKLOG: '10', RATE_LIMIT_PER_MINUTE: '60', RATE_LIMIT_BURST: '30' }));
    });
    afterAll(() => api?.stop());

    it('counts items, not requests, against the rate limit and MAX_BACKLOG; the items past them fail alone', async () => {
      const res = await postBatch(api, 'fibonacci', Array.from({ length: 40 }, (_, n) => ({ n })));
      expect(res.status).toBe(202);
      const statuses: number[] = res.body.items.map((e: { status: number }) => e.status);
      // The burst of 30 pays for the first 30 items (31 if a second passed meanwhile); the rest are 429.
      const paid = statuses.findIndex((s) => s === 429);
      expect([30, 31]).toContain(paid);
      expect(statuses.slice(paid).every((s) => s === 429)).toBe(true);
      expect(res.body.items[paid].problem.code).toBe('RATE_LIMITED');
      // Of the paid items, MAX_BACKLOG (10) were queued; the others are 503 BACKLOG_FULL.
      expect(statuses.slice(0, paid)).toEqual([...Array(10).fill(202), ...Array(paid - 10).fill(503)]);
      expect(res.body.items[10].problem.code).toBe('BACKLOG_FULL');
      // The budget is spent: the next request is refused at the door.
      const next = await submit(api.url, 'fibonacci', { n: 1 });
      expect(next.status).toBe(429);
      expect(next.headers.get('retry-after')).toMatch(/^\d+$/);
    });
  });
});
