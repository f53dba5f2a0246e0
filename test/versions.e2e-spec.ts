import { randomBytes } from 'node:crypto';
import IORedis from 'ioredis';
import { callerShares, queueKeys } from '@app/queue';
import { AppProcess, startApp, stackEnv } from './support/apps';
import { getJob, submit } from './support/http';
import { RepoCopy } from './support/repo-copy';
import { waitFor } from './support/wait';

const fib = (n: number): number => (n < 2 ? n : fib(n - 1) + fib(n - 2));
const OPS = randomBytes(24).toString('base64url');
const CAROL = randomBytes(24).toString('base64url');
const as = (key: string) => ({ 'x-api-key': key });

/**
 * A version bump during a rolling update: jobs queued for version 1 while no worker runs, then a
 * worker of the next release takes over. It runs every job whose version it still knows, with that
 * version's code (fibonacci keeps its v1 code; echo's v2 accepts v1 jobs); only a version it never
 * knew (chaos v1, dropped) fails with JOB_REJECTED. Results are cached under their own version. With
 * API keys (fair share on), as in production; carol may run one job at a time.
 */
describe('version bumps', () => {
  const env = stackEnv('versions', { WORKER_THREADS: '2', API_KEYS: `ops=${OPS},carol=${CAROL}`, CALLER_LIMITS: 'carol:concurrency=1' });
  const copy = RepoCopy.create('versions');
  const procs: AppProcess[] = [];
  const redis = new IORedis(env.REDIS_URL!);

  beforeAll(() => {
    // Release 2: fibonacci v2 returns an object and keeps v1's code; echo v2 accepts v1 jobs as they
    // are; chaos v2 drops v1.
    copy.edit('libs/jobs/src/fibonacci.job.ts', "import { defineJob } from './define-job';", "import { defineJob, previousVersion } from './define-job';");
    copy.edit('libs/jobs/src/fibonacci.job.ts', 'version: 1,', 'version: 2,');
    copy.edit('libs/jobs/src/fibonacci.job.ts', 'output: z.number().int(),', 'output: z.object({ value: z.number().int(), version: z.literal(2) }),');
    copy.edit(
      'libs/jobs/src/fibonacci.job.ts',
      'run: ({ n }) => fib(n),',
      'previousVersions: [previousVersion({ version: 1, input: z.strictObject({ n: z.int().min(0).max(50) }), run: ({ n }) => fib(n) })],\n  run: ({ n }) => ({ value: fib(n), version: 2 as const }),',
    );
    copy.edit('libs/jobs/src/echo.job.ts', 'version: 1,', 'version: 2,\n  previousVersions: [{ version: 1 }],');
    copy.edit('libs/jobs/src/chaos.job.ts', 'version: 1,', 'version: 2,');
    copy.build();
  }, 180_000);

  afterAll(async () => {
    await Promise.all(procs.map((p) => p.stop('SIGKILL')));
    redis.disconnect();
    copy.remove();
  });

  it('runs every queued job of a version the new worker still knows, and rejects only the unknown one', async () => {
    const oldApi = await startApp('api', env);
    procs.push(oldApi);
    const fibs = await Promise.all(Array.from({ length: 20 }, (_, i) => submit(oldApi.url, 'fibonacci', { n: 10 + i }, { headers: as(OPS) })));
    const echoes = await Promise.all(Array.from({ length: 10 }, (_, i) => submit(oldApi.url, 'echo', { numbers: [i, 3, -1, 2] }, { headers: as(OPS) })));
    const drills = await Promise.all([1, 2, 3].map((i) => submit(oldApi.url, 'chaos', { mode: 'ok', tag: `v1-${i}` }, { headers: as(OPS) })));
    const accepted = [...fibs, ...echoes, ...drills];
    expect(accepted.every((r) => r.status === 202)).toBe(true);

    // The next release's worker takes over the queue.
    const newWorker = await startApp('worker', env, { root: copy.root });
    procs.push(newWorker);
    expect(newWorker.logs.some((l) => /\bfibonacci@2\+1\b/.test(l.msg) && / echo@2\+1\b/.test(l.msg) && /\bchaos@2(?![+\d])/.test(l.msg))).toBe(true);

    const views = await waitFor(
      async () => {
        const all = await Promise.all(accepted.map(async (r) => (await getJob(oldApi.url, r.body.id, as(OPS))).body));
        return all.every((v) => v.status === 'completed' || v.status === 'failed') ? all : undefined;
      },
      { timeoutMs: 30_000, what: 'every accepted job to finish' },
    );
    const fibViews = views.slice(0, 20);
    const echoViews = views.slice(20, 30);
    const drillViews = views.slice(30);
    const known = [...fibViews, ...echoViews];
    console.log(
      `[ledger] version bump, v1 jobs of types the v2 worker still runs: ${known.length} accepted, ` +
        `${known.filter((v) => v.status === 'completed').length} completed, ${known.filter((v) => v.error?.code === 'JOB_REJECTED').length} JOB_REJECTED, 0 lost; ` +
        `control (chaos v1, dropped by v2): ${drillViews.filter((v) => v.error?.code === 'JOB_REJECTED').length}/${drillViews.length} JOB_REJECTED`,
    );
    expect(known.every((v) => v.status === 'completed')).toBe(true);
    // fibonacci v1 jobs ran v1's code (a number, not v2's object).
    expect(fibViews.map((v) => v.result)).toEqual(fibViews.map((_, i) => fib(10 + i)));
    // echo v1 jobs ran v2's code, which takes them as they are.
    expect(echoViews.map((v) => v.result)).toEqual(echoViews.map((_, i) => ({ numbers: [i, 3, -1, 2], choice: 'a' })));
    expect(drillViews.map((v) => v.error?.code)).toEqual(['JOB_REJECTED', 'JOB_REJECTED', 'JOB_REJECTED']);
    expect(drillViews[0].error.message).toMatch(/job is for chaos v1; this worker runs v2/);
  });

  it('caches each result under its own version: the new release does not serve v1 results', async () => {
    const keys = await redis.keys(queueKeys(env.REDIS_PREFIX!).cacheEntry('fibonacci:*'));
    expect(keys.filter((k) => k.includes(':fibonacci:v1:'))).toHaveLength(20);
    expect(keys.filter((k) => !k.includes(':fibonacci:v1:'))).toEqual([]);

    const oldApi = procs[0];
    const again = await submit(oldApi.url, 'fibonacci', { n: 10 }, { headers: as(OPS) });
    expect(again.body).toMatchObject({ status: 'completed', cached: true, result: 55 });

    const newApi = await startApp('api', env, { root: copy.root });
    procs.push(newApi);
    const v2 = await submit(newApi.url, 'fibonacci', { n: 10 }, { wait: 10, headers: as(OPS) });
    expect(v2.body).toMatchObject({ status: 'completed', result: { value: 55, version: 2 } });
    expect(v2.body.cached).toBeUndefined();
    expect(await redis.exists(...(await redis.keys(queueKeys(env.REDIS_PREFIX!).cacheEntry('fibonacci:v2:*'))))).toBe(1);
  });

  it("fair share: a job handed back for a newer version stays its caller's running job until it ends, then the caller's next jobs start", async () => {
    const [, newWorker, newApi] = procs;
    // A rolling update that started the new API before the new workers: only an old worker runs.
    newWorker.signal('SIGSTOP');
    const oldWorker = await startApp('worker', env);
    procs.push(oldWorker);
    const carol = (i: number) => submit(newApi.url, 'echo', { numbers: [i, 5, -1] }, { headers: as(CAROL) });
    const ids: string[] = [];
    try {
      for (const i of [1, 2, 3]) ids.push((await carol(i)).body.id);
      // The old worker puts echo v2 jobs back (delayed 2 s, again and again): carol's one job at a time
      // is that one, counted running, and her next ones wait.
      await waitFor(() => oldWorker.logs.filter((l) => String(l.msg).includes('putting it back for a newer worker')).length >= 2, {
        timeoutMs: 20_000,
        what: 'the old worker handed the job back twice',
      });
      expect((await callerShares(redis, env.REDIS_PREFIX!, 'default')).find((share) => share.caller === 'carol')).toMatchObject({ running: 1, waiting: 2 });
    } finally {
      newWorker.signal('SIGCONT');
    }
    // The new release's worker is up: it runs the handed-back job, then carol's next ones in turn.
    await waitFor(
      async () => {
        const shares = await callerShares(redis, env.REDIS_PREFIX!, 'default');
        return shares.find((share) => share.caller === 'carol')?.running === 0 && shares.every((share) => share.waiting === 0 && share.running === 0);
      },
      { timeoutMs: 30_000, what: "carol's running and waiting counts back to 0" },
    );
    const views = await Promise.all(ids.map(async (id) => (await getJob(newApi.url, id, as(CAROL))).body));
    expect(views.map((v) => [v.status, v.result?.numbers])).toEqual([1, 2, 3].map((i) => ['completed', [i, 5, -1]]));
    // One at a time (concurrency 1), the handed-back job first.
    const runs = views.map((v) => [Date.parse(v.startedAt), Date.parse(v.finishedAt)]);
    expect(runs[1][0]).toBeGreaterThanOrEqual(runs[0][1]);
  });
});
