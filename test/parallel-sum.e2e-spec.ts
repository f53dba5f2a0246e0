import { METRIC_PREFIX } from '@app/metrics';
import { childJobId } from '@app/queue';
import { AppProcess, startApp, stackEnv } from './support/apps';
import { getJob, readEvents, request, submit } from './support/http';
import { waitFor } from './support/wait';

const triangle = (n: number) => ((BigInt(n) * BigInt(n + 1)) / 2n).toString();

/**
 * Fan-out, through its example (parallel-sum → sum-range chunks on the heavy queue): the chunks run as
 * child jobs on every worker of the queue, progress comes from the children, a cancel stops the whole
 * tree and a chunk that fails for good fails the parent with a clear code. Named after the example, so
 * `npm run remove:job -- parallel-sum sum-range` removes it with them.
 */
describe('fan-out jobs', () => {
  // why JOB_TIMEOUT_MS: a chunk of n = 10^12 runs for minutes, so it times out (the failing child).
  const env = stackEnv('fan-out', { WORKER_THREADS: '1', WORKER_QUEUES: 'heavy', JOB_TIMEOUT_MS: '10000' });
  let api: AppProcess;
  let workers: AppProcess[] = [];

  beforeAll(async () => {
    const apps = await Promise.allSettled([startApp('api', env), startApp('worker', env), startApp('worker', env)]);
    const started = apps.flatMap((a) => (a.status === 'fulfilled' ? [a.value] : []));
    if (started.length < apps.length) {
      await Promise.all(started.map((p) => p.stop('SIGKILL')));
      throw (apps.find((a) => a.status === 'rejected') as PromiseRejectedResult).reason;
    }
    [api, ...workers] = started;
  });

  afterAll(async () => {
    await Promise.all([api, ...workers].map((p) => p?.stop()));
  });

  it('splits the work over both workers, reports progress from the chunks, and merges exactly', async () => {
    const n = 8_000_000_000;
    const { status, body } = await submit(api.url, 'parallel-sum', { n, chunks: 8 });
    expect(status).toBe(202);
    const events = await readEvents(`${api.url}/v1/jobs/${body.id}/events`, 60_000);
    const final = events.at(-1)!;
    expect(final).toMatchObject({ event: 'completed', data: { status: 'completed', result: triangle(n) } });
    const progress = events.filter((e) => e.event === 'progress').map((e) => e.data.progress as number);
    expect(progress.some((p) => p > 0 && p < 100)).toBe(true);
    expect(progress).toEqual([...progress].sort((a, b) => a - b));

    const perWorker = await Promise.all(workers.map((w) => w.metric(`${METRIC_PREFIX}jobs_finished_total`, { type: 'sum-range', outcome: 'completed' })));
    console.log(`[fan-out] 8 chunks of parallel-sum n=${n}: ${perWorker.join(' + ')} per worker, ${progress.length} progress events`);
    expect(perWorker.reduce((a, b) => a + b, 0)).toBe(8);
    expect(perWorker.every((count) => count > 0)).toBe(true);
    // The chunks are jobs of their own, readable by id.
    const chunk = await getJob(api.url, childJobId(body.id, 0));
    expect(chunk.body).toMatchObject({ type: 'sum-range', status: 'completed', result: triangle(n / 8) });
  }, 90_000);

  it('cancels the whole tree: running chunks are aborted, queued ones removed', async () => {
    const completedBefore = (
      await Promise.all(workers.map((w) => w.metric(`${METRIC_PREFIX}jobs_finished_total`, { type: 'sum-range', outcome: 'completed' })))
    ).reduce((a, b) => a + b, 0);
    const { body } = await submit(api.url, 'parallel-sum', { n: 1e12, chunks: 4 });
    const chunkIds = [0, 1, 2, 3].map((i) => childJobId(body.id, i));
    // Both workers have a chunk each; the other two wait.
    await waitFor(async () => (await Promise.all(chunkIds.map((id) => getJob(api.url, id)))).filter((r) => r.body.status === 'active').length === 2, {
      what: 'two chunks running',
    });
    const cancelled = await request(`${api.url}/v1/jobs/${body.id}`, { method: 'DELETE' });
    expect([200, 202]).toContain(cancelled.status);
    const view = await waitFor(async () => {
      const { body: v } = await getJob(api.url, body.id);
      return v.status !== 'active' && v;
    });
    expect(view).toMatchObject({ status: 'cancelled', error: { code: 'JOB_CANCELLED' } });
    const chunks = await Promise.all(chunkIds.map((id) => getJob(api.url, id)));
    // Running chunks end cancelled. Queued ones are removed, or, when a worker freed by an abort
    // takes one before the removal, it sees the parent's cancel marker and ends cancelled without running.
    const ends = chunks.map((c) => (c.status === 404 ? 'removed' : c.body.status));
    expect(ends.filter((end) => end === 'cancelled').length).toBeGreaterThanOrEqual(2);
    expect(ends.every((end) => end === 'cancelled' || end === 'removed')).toBe(true);
    const ran = await Promise.all(workers.map((w) => w.metric(`${METRIC_PREFIX}jobs_finished_total`, { type: 'sum-range', outcome: 'completed' })));
    expect(ran.reduce((a, b) => a + b, 0)).toBe(completedBefore);
    await waitFor(async () => (await Promise.all(workers.map((w) => w.metric(`${METRIC_PREFIX}jobs_active`)))).every((a) => a === 0), {
      what: 'workers idle',
    });
  });

  it('fails the parent with JOB_CHILD_FAILED when a chunk fails for good, and stops the rest', async () => {
    const { body } = await submit(api.url, 'parallel-sum', { n: 1e12, chunks: 3 });
    const view = await waitFor(
      async () => {
        const { body: v } = await getJob(api.url, body.id);
        return v.status === 'failed' && v;
      },
      { timeoutMs: 20_000, what: 'the parent to fail' },
    );
    expect(view.error.code).toBe('JOB_CHILD_FAILED');
    expect(view.error.message).toMatch(/^chunk \d of 3 \(sum-range job [0-9a-f-]{36}\) failed: JOB_TIMEOUT: /);
    await waitFor(async () => (await Promise.all(workers.map((w) => w.metric(`${METRIC_PREFIX}jobs_active`)))).every((a) => a === 0), {
      what: 'workers idle',
    });
    const third = await getJob(api.url, childJobId(body.id, 2));
    expect(third.status === 404 || ['cancelled', 'failed'].includes(third.body.status)).toBe(true);
  });
});
