import { METRIC_PREFIX } from '@app/metrics';
import { childJobId } from '@app/queue';
import { AppProcess, startAll, startApp, stackEnv } from './support/apps';
import { getJob, readEvents, request, submit } from './support/http';
import { waitFor } from './support/wait';

/**
 * Fan-out (defineFanOut), through the test type `fan-out` (`parts` spin jobs on the heavy queue), so
 * it is tested whichever examples are left: the parts run as child jobs on every worker of the
 * queue, progress comes from the children, a cancel stops the whole tree and a part that fails for
 * good fails the parent with a clear code.
 */
describe('fan-out jobs', () => {
  // why JOB_TIMEOUT_MS: a part of 600 s times out (the failing child).
  const env = stackEnv('fan-out', { WORKER_THREADS: '1', WORKER_QUEUES: 'heavy', JOB_TIMEOUT_MS: '10000' });
  let api: AppProcess;
  let workers: AppProcess[] = [];
  const completedParts = async () =>
    (await Promise.all(workers.map((w) => w.metric(`${METRIC_PREFIX}jobs_finished_total`, { type: 'spin', outcome: 'completed' })))).reduce((a, b) => a + b, 0);
  const idle = () =>
    waitFor(async () => (await Promise.all(workers.map((w) => w.metric(`${METRIC_PREFIX}jobs_active`)))).every((a) => a === 0), { what: 'workers idle' });

  beforeAll(async () => {
    [api, ...workers] = await startAll([startApp('api', env), startApp('worker', env), startApp('worker', env)]);
  });

  afterAll(async () => {
    await Promise.all([api, ...workers].map((p) => p?.stop()));
  });

  it('splits the work over both workers, reports progress from the parts, and merges their results', async () => {
    const { status, body } = await submit(api.url, 'fan-out', { parts: 8, ms: 600, tag: 'split' });
    expect(status).toBe(202);
    const events = await readEvents(`${api.url}/v1/jobs/${body.id}/events`, 60_000);
    expect(events.at(-1)).toMatchObject({ event: 'completed', data: { status: 'completed', result: { parts: 8, ms: 4800 } } });
    const progress = events.filter((e) => e.event === 'progress').map((e) => e.data.progress as number);
    expect(progress.some((p) => p > 0 && p < 100)).toBe(true);
    expect(progress).toEqual([...progress].sort((a, b) => a - b));

    const perWorker = await Promise.all(workers.map((w) => w.metric(`${METRIC_PREFIX}jobs_finished_total`, { type: 'spin', outcome: 'completed' })));
    console.log(`[fan-out] 8 parts of 600 ms: ${perWorker.join(' + ')} per worker, ${progress.length} progress events`);
    expect(perWorker.reduce((a, b) => a + b, 0)).toBe(8);
    expect(perWorker.every((count) => count > 0)).toBe(true);
    // The parts are jobs of their own, readable by id.
    const part = await getJob(api.url, childJobId(body.id, 0));
    expect(part.body).toMatchObject({ type: 'spin', status: 'completed', result: { ms: 600, tag: 'split#0' } });
  }, 90_000);

  it('cancels the whole tree: running parts are aborted, queued ones removed', async () => {
    const completedBefore = await completedParts();
    const { body } = await submit(api.url, 'fan-out', { parts: 4, ms: 600_000, tag: 'cancel', sleep: true });
    const partIds = [0, 1, 2, 3].map((i) => childJobId(body.id, i));
    // Both workers have a part each; the other two wait.
    await waitFor(async () => (await Promise.all(partIds.map((id) => getJob(api.url, id)))).filter((r) => r.body.status === 'active').length === 2, {
      what: 'two parts running',
    });
    const cancelled = await request(`${api.url}/v1/jobs/${body.id}`, { method: 'DELETE' });
    expect([200, 202]).toContain(cancelled.status);
    const view = await waitFor(async () => {
      const { body: v } = await getJob(api.url, body.id);
      return v.status !== 'active' && v;
    });
    expect(view).toMatchObject({ status: 'cancelled', error: { code: 'JOB_CANCELLED' } });
    // Running parts end cancelled. Queued ones are removed, or, when a worker freed by an abort
    // takes one before the removal, it sees the parent's cancel marker and ends cancelled without running.
    // why wait: the parent ends with the first part aborted; the other's abort may still be on its way.
    const ends = await waitFor(async () => {
      const parts = await Promise.all(partIds.map((id) => getJob(api.url, id)));
      const now = parts.map((c) => (c.status === 404 ? 'removed' : (c.body.status as string)));
      return now.every((end) => !['queued', 'active'].includes(end)) ? now : undefined;
    }, { what: 'every part to end' });
    expect(ends.filter((end) => end === 'cancelled').length).toBeGreaterThanOrEqual(2);
    expect(ends.every((end) => end === 'cancelled' || end === 'removed')).toBe(true);
    expect(await completedParts()).toBe(completedBefore);
    await idle();
  });

  it('fails the parent with JOB_CHILD_FAILED when a part fails for good, and stops the rest', async () => {
    const { body } = await submit(api.url, 'fan-out', { parts: 3, ms: 600_000, tag: 'fail', sleep: true });
    const view = await waitFor(
      async () => {
        const { body: v } = await getJob(api.url, body.id);
        return v.status === 'failed' && v;
      },
      { timeoutMs: 20_000, what: 'the parent to fail' },
    );
    expect(view.error.code).toBe('JOB_CHILD_FAILED');
    expect(view.error.message).toMatch(/^chunk \d of 3 \(spin job [0-9a-f-]{36}\) failed: JOB_TIMEOUT: /);
    await idle();
    const third = await getJob(api.url, childJobId(body.id, 2));
    expect(third.status === 404 || ['cancelled', 'failed'].includes(third.body.status)).toBe(true);
  });
});
