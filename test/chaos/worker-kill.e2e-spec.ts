import { METRIC_PREFIX } from '@app/metrics';
import { AppProcess, startApp, stackEnv } from '../support/apps';
import { executions, inParallel, Ledger } from '../support/ledger';
import { waitFor } from '../support/wait';

/**
 * Fault 1: the worker is killed with SIGKILL in the middle of a load. Nothing it held is lost: the
 * jobs it had started become stalled once their lock expires and another worker runs them again.
 */
describe('worker killed mid-load (kill -9)', () => {
  const JOBS = 200;
  const WORKER_THREADS = 2;
  // why: the stalled jobs are re-run only after their lock expires; a short lock keeps the test quick.
  const env = stackEnv('chaos-kill', { JOB_LOCK_MS: '2000', WORKER_THREADS: String(WORKER_THREADS) });
  let api: AppProcess | undefined;
  let first: AppProcess | undefined;
  let second: AppProcess | undefined;

  afterAll(async () => {
    await Promise.all([api?.stop(), first?.stop('SIGKILL'), second?.stop()]);
  });

  it('loses no accepted job; only jobs the killed worker held run twice', async () => {
    [api, first] = await Promise.all([startApp('api', env), startApp('worker', env)]);
    const ledger = new Ledger('worker kill -9');
    const run = Date.now().toString(36);
    // 200 distinct jobs of ~20 ms each: several seconds of work for two threads.
    const inputs = Array.from({ length: JOBS }, (_, i) => ({ ms: 20, tag: `kill-${run}-${i}` }));
    await inParallel(inputs, 20, (input) => ledger.submit(api!.url, 'spin', input));
    expect(ledger.entries.size).toBe(JOBS);

    const completedBy = (w: AppProcess) => w.logs.filter((l) => l.msg === 'job completed').length;
    await waitFor(() => completedBy(first!) >= JOBS / 4, { timeoutMs: 30_000, what: 'a quarter of the load done' });
    // Kill it while it runs jobs: at least one started and not yet finished.
    const active = () => executions([first]).size - completedBy(first!);
    await waitFor(() => active() > 0, { intervalMs: 5, what: 'a job in flight' });
    first.signal('SIGKILL');
    await first.exited;
    const doneBeforeKill = completedBy(first);
    const startedOnFirst = new Set(executions([first]).keys());

    second = await startApp('worker', env);
    const summary = await ledger.check(api.url, [first, second], { timeoutMs: 60_000 });
    // The second worker's own count (Prometheus) agrees with its log lines.
    const metricRuns = await second.metric(`${METRIC_PREFIX}job_run_seconds_count`, { type: 'spin' });
    ledger.print(summary, { doneByKilledWorker: doneBeforeKill, doneBySecondWorker: completedBy(second), secondWorkerMetricRuns: metricRuns });
    expect(metricRuns).toBe([...executions([second]).values()].reduce((a, b) => a + b, 0));

    expect(summary.problems).toEqual([]);
    expect(summary.lost).toBe(0);
    expect(summary.completed).toBe(JOBS);
    // At-least-once: duplicates are only jobs the killed worker had started, at most one per thread.
    for (const { id } of summary.duplicated) expect(startedOnFirst.has(id)).toBe(true);
    expect(summary.duplicates).toBeLessThanOrEqual(WORKER_THREADS);
    expect(second.logs.filter((l) => l.level >= 50)).toEqual([]);
  }, 120_000);
});
