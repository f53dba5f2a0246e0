import { Queue } from 'bullmq';
import IORedis from 'ioredis';
import { bullKey, queuePrefix } from '@app/queue';
import { AppEnv, AppProcess, startApp, stackEnv } from './support/apps';
import { getJob, Reply, request } from './support/http';
import { RepoCopy } from './support/repo-copy';
import { sleep, waitFor } from './support/wait';

const TICK_MS = 1000;
const WINDOW_MS = 30_000;
const tickId = /^repeat:chaos:tick:(\d+)$/;

/**
 * Recurring jobs: a build whose `chaos` type declares a schedule (read from E2E_SCHEDULES, so one
 * build of the copy serves every case) runs with two APIs and two workers. Each tick is one job, run
 * once; a replica starting meanwhile changes nothing; this tree's build, where `chaos` declares no
 * schedule, removes it from Redis and leaves a scheduler it did not make alone.
 */
describe('recurring jobs', () => {
  const env = stackEnv('schedules', { WORKER_THREADS: '2' });
  const copy = RepoCopy.create('schedules');
  const procs: AppProcess[] = [];
  const redis = new IORedis(env.REDIS_URL!);
  const queue = new Queue('default', { connection: redis, prefix: queuePrefix(env.REDIS_PREFIX!, 'default') });
  const withSchedules = (schedules: unknown[]) => ({ ...env, E2E_SCHEDULES: JSON.stringify(schedules) });
  const tickEnv = withSchedules([{ name: 'tick', everyMs: TICK_MS, input: { mode: 'ok', tag: 'tick' } }]);
  const start = async (kind: 'api' | 'worker', appEnv: AppEnv = tickEnv, root: string | undefined = copy.root) => {
    const app = await startApp(kind, appEnv, { root });
    procs.push(app);
    return app;
  };
  const scheduler = () => queue.getJobScheduler('chaos:tick');

  beforeAll(() => {
    copy.edit('libs/jobs/src/chaos.job.ts', '  priority: 100,\n', "  priority: 100,\n  schedules: JSON.parse(process.env.E2E_SCHEDULES ?? '[]'),\n");
    copy.build();
  }, 240_000);

  afterAll(async () => {
    await Promise.all(procs.map((p) => p.stop('SIGKILL')));
    await queue.close();
    redis.disconnect();
    copy.remove();
  });

  it('runs one job per tick with two APIs and two workers: no duplicates and no gaps over 30 s', async () => {
    // why two at a time: four apps booting at once on two shared cores can outlast the readiness wait.
    const [api] = await Promise.all([start('api'), start('worker')]);
    const [second] = await Promise.all([start('api'), start('worker')]);
    await waitFor(scheduler, { what: 'the schedule registered' });
    const from = Date.now();
    // Halfway, an API replica restarts: registering again at start-up must not disturb the ticks.
    await sleep(WINDOW_MS / 2);
    await second.stop('SIGTERM');
    await start('api');
    await sleep(WINDOW_MS / 2);
    const to = Date.now();
    await sleep(2000); // the last ticks of the window finish

    const completed = await redis.zrange(bullKey(env.REDIS_PREFIX!, 'default', 'completed'), 0, -1);
    const failed = await redis.zrange(bullKey(env.REDIS_PREFIX!, 'default', 'failed'), 0, -1);
    const ticks = completed
      .map((id) => Number(tickId.exec(id)?.[1]))
      .filter((ms) => ms >= from && ms <= to)
      .sort((a, b) => a - b);
    const gaps = ticks.slice(1).map((ms, i) => ms - ticks[i]);
    const starts = procs.filter((p) => p.kind === 'worker').flatMap((w) => w.logs.filter((l) => l.msg === 'job started' && tickId.test(String(l.jobId))));
    const runs = new Map<string, number>();
    for (const line of starts) runs.set(String(line.jobId), (runs.get(String(line.jobId)) ?? 0) + 1);
    console.log(`[schedules] ${ticks.length} ticks in ${to - from} ms with 2 APIs (one restarted) and 2 workers; intervals ${Math.min(...gaps)}-${Math.max(...gaps)} ms; ${failed.length} failed; ${[...runs.values()].filter((n) => n > 1).length} run twice`);

    expect(failed).toEqual([]);
    expect(new Set(gaps)).toEqual(new Set([TICK_MS])); // no gap, no extra tick between two
    expect(ticks[0] - from).toBeLessThan(TICK_MS);
    expect(to - ticks.at(-1)!).toBeLessThan(TICK_MS);
    expect(ticks.length).toBeGreaterThanOrEqual(Math.floor(WINDOW_MS / TICK_MS));
    for (const ms of ticks) expect(runs.get(`repeat:chaos:tick:${ms}`)).toBe(1);
    // Both workers took ticks: the schedule is not tied to one replica.
    expect(procs.filter((p) => p.kind === 'worker').every((w) => w.logs.some((l) => l.msg === 'job started'))).toBe(true);

    const done = await getJob(api.url, `repeat:chaos:tick:${ticks[0]}`);
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({ id: `repeat:chaos:tick:${ticks[0]}`, type: 'chaos', status: 'completed', result: { mode: 'ok', attempt: 1 } });
  }, 120_000);

  it('lists the schedule with its next run, and cancels one tick without stopping the schedule', async () => {
    const api = procs.find((p) => p.kind === 'api' && p.alive)!;
    const listed = await request(`${api.url}/v1/schedules`);
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual([
      {
        id: 'chaos:tick',
        type: 'chaos',
        name: 'tick',
        everyMs: TICK_MS,
        input: { mode: 'ok', ms: 0, lines: 0, tag: 'tick' },
        nextRunAt: expect.any(String),
        nextJobId: expect.stringMatching(tickId),
      },
    ]);
    expect(Date.parse(listed.body[0].nextRunAt)).toBe(Number(tickId.exec(listed.body[0].nextJobId)![1]));

    // Cancel the next tick. why a few tries: a tick falls due every second, so on a busy host one
    // may have run before the DELETE reached it (then it answers with the finished tick).
    let next = 0;
    let cancelled: Reply | undefined;
    for (let attempt = 0; attempt < 5 && cancelled?.body?.status !== 'cancelled'; attempt++) {
      const { body: schedules } = await request(`${api.url}/v1/schedules`);
      next = Number(tickId.exec(schedules[0].nextJobId)![1]);
      cancelled = await request(`${api.url}/v1/jobs/${schedules[0].nextJobId}`, { method: 'DELETE' });
    }
    expect(cancelled!.status).toBe(200);
    expect(cancelled!.body).toMatchObject({ status: 'cancelled', error: { code: 'JOB_CANCELLED' } });
    const after = await waitFor(async () => (await getJob(api.url, `repeat:chaos:tick:${next + 2 * TICK_MS}`)).body?.status === 'completed', {
      timeoutMs: 10_000,
      what: 'the ticks after the cancelled one',
    });
    expect(after).toBe(true);
  });

  it('removes the schedule from Redis when a build no longer declares it, and only schedulers it made', async () => {
    await Promise.all(procs.map((p) => p.stop('SIGTERM')));
    await queue.upsertJobScheduler('someone-else', { every: 60_000 }, { name: 'report', data: { any: 'thing' } });
    expect(await scheduler()).toBeDefined();

    // This tree's build: `chaos` declares no schedule.
    const api = await start('api', env, undefined);
    await waitFor(() => api.logs.find((l) => l.msg === 'job schedules registered'), { what: 'the schedules reconciled' });
    expect(api.logs.find((l) => l.msg === 'job schedules registered')).toMatchObject({ removed: ['chaos:tick'], added: [] });
    expect(await scheduler()).toBeUndefined();
    expect(await queue.getJobScheduler('someone-else')).toBeDefined();
    // The next tick's job went with its scheduler.
    expect((await redis.zrange(bullKey(env.REDIS_PREFIX!, 'default', 'delayed'), 0, -1)).filter((id) => tickId.test(id))).toEqual([]);
    expect((await request(`${api.url}/v1/schedules`)).body).toEqual([]);
  });

  it('refuses to start with a cron expression BullMQ cannot parse, naming the type', async () => {
    const badEnv = withSchedules([{ name: 'broken', cron: '61 * * * *', input: { mode: 'ok' } }]);
    for (const kind of ['api', 'worker'] as const) {
      const app = await startApp(kind, badEnv, { root: copy.root, waitFor: 'none' });
      procs.push(app);
      expect(await app.exited).toBe(1);
      expect(app.stderr.join('')).toContain('Job type "chaos": schedule "broken": invalid cron expression "61 * * * *"');
    }
  });
});
