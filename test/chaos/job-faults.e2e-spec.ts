import { readFileSync } from 'node:fs';
import { METRIC_PREFIX } from '@app/metrics';
import { AppProcess, startStack, stackEnv } from '../support/apps';
import { getJob, submit } from '../support/http';
import { Ledger } from '../support/ledger';
import { sleep, waitFor } from '../support/wait';

/**
 * Fault 4: a job that never ends, one that exits its thread and one that allocates without bound run
 * together while a stream of ordinary jobs flows. Each bad job fails only itself with its code; the
 * stream keeps completing through the faults and the worker stays ready.
 */
describe('bad jobs in a stream of good ones', () => {
  const THREADS = 3;
  let api: AppProcess | undefined;
  let worker: AppProcess | undefined;
  let stop: (() => Promise<void>) | undefined;

  afterAll(async () => stop?.());

  it('fails each bad job alone with JOB_TIMEOUT, JOB_CRASHED or JOB_OUT_OF_MEMORY; the rest flows', async () => {
    ({ api, worker, stop } = await startStack(
      stackEnv('chaos-job-faults', { WORKER_THREADS: String(THREADS), JOB_TIMEOUT_MS: '1500', WORKER_MAX_MEMORY_MB: '64' }),
    ));
    const ledger = new Ledger('bad jobs');
    const run = Date.now().toString(36);
    let streaming = true;
    const readiness: number[] = [];
    let n = 2_000_000;
    const stream = (async () => {
      while (streaming) {
        await ledger.submit(api!.url, 'sum', { n: n++ });
        await sleep(100);
      }
    })();
    const probe = (async () => {
      while (streaming) {
        readiness.push((await fetch(`${worker!.url}/health/ready`)).status);
        await sleep(100);
      }
    })();

    await sleep(500);
    const faultsAt = Date.now();
    const [hang, exit, leak] = await Promise.all([
      ledger.submit(api.url, 'chaos', { mode: 'hang', tag: `hang-${run}` }, { expect: { status: 'failed', code: 'JOB_TIMEOUT' } }),
      // why: a crashed thread is retried per the type's policy (2 attempts for chaos), so it runs twice.
      ledger.submit(api.url, 'chaos', { mode: 'exit', tag: `exit-${run}` }, { expect: { status: 'failed', code: 'JOB_CRASHED' }, runs: 2 }),
      ledger.submit(api.url, 'chaos', { mode: 'leak', tag: `leak-${run}` }, { expect: { status: 'failed', code: 'JOB_OUT_OF_MEMORY' } }),
    ]);
    const faultIds = [hang, exit, leak].map((r) => r.body.id as string);
    const final = (s: string) => ['completed', 'failed', 'cancelled'].includes(s);
    await waitFor(async () => (await Promise.all(faultIds.map((id) => getJob(api!.url, id)))).every((r) => final(r.body.status)), {
      timeoutMs: 30_000,
      what: 'the bad jobs to fail',
    });
    const faultsDone = Date.now();
    await sleep(500);
    streaming = false;
    await Promise.all([stream, probe]);

    const summary = await ledger.check(api.url, [worker], { timeoutMs: 30_000 });
    const views = await Promise.all(ledger.ids.map(async (id) => (await getJob(api!.url, id)).body));
    const duringFaults = views.filter(
      (v) => v.type === 'sum' && v.status === 'completed' && Date.parse(v.finishedAt) >= faultsAt && Date.parse(v.finishedAt) <= faultsDone,
    ).length;
    const codes = faultIds.map((id) => views.find((v) => v.id === id)?.error?.code);
    ledger.print(summary, {
      faults: codes.join('/'),
      faultWindowMs: faultsDone - faultsAt,
      streamCompletedDuringFaults: duringFaults,
      readinessProbes: readiness.length,
      notReady: readiness.filter((s) => s !== 200).length,
    });

    expect(codes).toEqual(['JOB_TIMEOUT', 'JOB_CRASHED', 'JOB_OUT_OF_MEMORY']);
    expect(summary.problems).toEqual([]);
    expect(summary.lost).toBe(0);
    expect(summary.duplicates).toBe(0);
    expect(duringFaults).toBeGreaterThan(0);
    expect(readiness.every((s) => s === 200)).toBe(true);
    expect(worker.alive).toBe(true);
    expect(worker.logs.filter((l) => l.level >= 50)).toEqual([]);
    // The pool replaced every thread it lost.
    await waitFor(async () => (await worker!.metric(`${METRIC_PREFIX}pool_threads`)) === THREADS, { what: 'pool back to size' });
  }, 90_000);
});

/** CPU seconds (user + system) a process has used so far, from /proc (Linux). */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/*
 * A timed-out (or cancelled) job inside a native call keeps running until the call returns: V8 can
 * stop a thread only while it runs JavaScript, and pbkdf2Sync runs in OpenSSL. The pool replaces the
 * thread at once, so the job fails on time, but the old thread holds a core until then, and the
 * worker cannot exit before it ends. So pbkdf2 bounds the work one input may ask for
 * (PBKDF2_MAX_WORK: about 5 s of sha512 here), and the worst case is that bounded wait.
 */
const linux = process.platform === 'linux' ? describe : describe.skip;
linux('a job stuck in native code past its timeout', () => {
  let api: AppProcess | undefined;
  let worker: AppProcess | undefined;
  let stop: (() => Promise<void>) | undefined;

  afterAll(async () => {
    worker?.signal('SIGKILL');
    await stop?.();
  });

  it('refuses unbounded native work; a bounded job that times out lets the worker exit 0 in time', async () => {
    const SHUTDOWN_TIMEOUT_MS = 2000;
    ({ api, worker, stop } = await startStack(
      stackEnv('chaos-native-timeout', { WORKER_THREADS: '1', JOB_TIMEOUT_MS: '1000', WORKER_NICE: '0', WORKER_SCHED: 'other', SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS) }),
    ));
    // 52 blocks x 10M iterations of HMAC-SHA1 would hold a core for minutes: refused up front.
    const unbounded = await submit(api.url, 'pbkdf2', { password: 'p', salt: 's', iterations: 10_000_000, keylen: 1024, digest: 'sha1' });
    expect(unbounded.status).toBe(400);
    expect(unbounded.body.errors).toEqual([expect.objectContaining({ field: 'iterations' })]);

    // The most work allowed (10M iterations of one sha512 block) past a 1 s timeout.
    const input = { password: 'p', salt: `native-${Date.now()}`, iterations: 10_000_000 };
    const res = await submit(api.url, 'pbkdf2', input, { wait: 15 });
    expect(res.body).toMatchObject({ status: 'failed', error: { code: 'JOB_TIMEOUT' } });
    const before = cpuSeconds(worker.pid);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const burnt = cpuSeconds(worker.pid) - before;

    const t0 = Date.now();
    worker.signal('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const code = await Promise.race([
      worker.exited,
      new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), SHUTDOWN_TIMEOUT_MS + 10_000))),
    ]);
    clearTimeout(timer);
    console.log(
      `[native-timeout] max-work pbkdf2 timed out; worker CPU in the next 1 s: ${burnt.toFixed(2)} s (the native call finishing); ` +
        `exit ${String(code)} after ${Date.now() - t0} ms`,
    );
    expect(code).toBe(0);
  }, 60_000);
});
