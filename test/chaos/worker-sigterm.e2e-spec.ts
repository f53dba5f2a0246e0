import { AppProcess, startApp, stackEnv } from '../support/apps';
import { getJob } from '../support/http';
import { executions, Ledger } from '../support/ledger';
import { waitFor } from '../support/wait';

/**
 * Fault 2: SIGTERM while long jobs run. Jobs that can finish before SHUTDOWN_TIMEOUT_MS do; the rest
 * are handed back to the queue and another worker runs them. The process exits 0 in time.
 */
describe('worker SIGTERM with jobs in flight', () => {
  const SHUTDOWN_TIMEOUT_MS = 4000;
  const env = stackEnv('chaos-sigterm', { SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS), WORKER_THREADS: '4', JOB_LOCK_MS: '5000' });
  let api: AppProcess | undefined;
  let first: AppProcess | undefined;
  let second: AppProcess | undefined;

  afterAll(async () => {
    await Promise.all([api?.stop(), first?.stop('SIGKILL'), second?.stop()]);
  });

  it('finishes what fits in the deadline, hands back the rest, loses nothing and exits 0', async () => {
    [api, first] = await Promise.all([startApp('api', env), startApp('worker', env)]);
    const ledger = new Ledger('worker SIGTERM');
    const run = Date.now().toString(36);
    // Four threads busy: two jobs that end inside the deadline, two that cannot.
    const short = [1, 2].map((i) => ({ mode: 'sleep', ms: 2500, tag: `short-${run}-${i}` }));
    const long = [1, 2].map((i) => ({ mode: 'sleep', ms: 7000, tag: `long-${run}-${i}` }));
    const accepted = await Promise.all([
      ...short.map((input) => ledger.submit(api!.url, 'chaos', input)),
      // why: a handed-back job runs again from the start on the next worker; that second run is the contract.
      ...long.map((input) => ledger.submit(api!.url, 'chaos', input, { runs: 2 })),
    ]);
    const ids = accepted.map((r) => r.body.id as string);
    await waitFor(async () => (await Promise.all(ids.map((id) => getJob(api!.url, id)))).every((r) => r.body.status === 'active'), {
      what: 'four jobs active',
    });
    // Queued behind them: the draining worker must not take these; the next one does.
    for (let i = 0; i < 4; i++) await ledger.submit(api.url, 'echo', { text: `queued-${run}-${i}` });

    const t0 = Date.now();
    first.signal('SIGTERM');
    const [code] = await Promise.all([first.exited, startApp('worker', env).then((w) => (second = w))]);
    const exitMs = Date.now() - t0;

    const summary = await ledger.check(api.url, [first, second], { timeoutMs: 30_000 });
    const completedOnFirst = first.logs.filter((l) => l.msg === 'job completed').map((l) => l.jobId);
    const handedBack = first.logs.filter((l) => l.msg === 'job handed back to the queue for another worker').map((l) => l.jobId);
    ledger.print(summary, { exitCode: code, exitMs, finishedInDeadline: completedOnFirst.length, handedBack: handedBack.length });

    expect(code).toBe(0);
    expect(exitMs).toBeLessThan(SHUTDOWN_TIMEOUT_MS + 5000);
    expect(summary.problems).toEqual([]);
    expect(summary.lost).toBe(0);
    expect(summary.duplicates).toBe(0);
    // Both outcomes happened: the short jobs finished on the draining worker, the long ones moved on.
    expect(completedOnFirst.sort()).toEqual(ids.slice(0, 2).sort());
    expect(handedBack.sort()).toEqual(ids.slice(2).sort());
    const onSecond = executions([second]);
    for (const id of ids.slice(2)) expect(onSecond.get(id)).toBe(1);
    // The queued jobs never started on the draining worker.
    const onFirst = executions([first]);
    expect(ledger.ids.filter((id) => onFirst.has(id)).sort()).toEqual(ids.sort());
    // Handing back is not a failed attempt.
    for (const id of ids.slice(2)) expect((await getJob(api.url, id)).body.error).toBeUndefined();
  }, 90_000);
});
