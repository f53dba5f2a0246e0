import { join } from 'node:path';
import { Queue, QueueEvents } from 'bullmq';
import { AppProcess, startApp, startScript, stackEnv, uniquePrefix } from '../support/apps';
import { executions, Ledger } from '../support/ledger';
import { waitFor } from '../support/wait';

const JOBS = 4;
const SPIN_MS = 2500;
const LOCK_MS = 1000;

/** Connection options BullMQ opens (and closes) itself. */
const connectionTo = (url: string) => ({ host: new URL(url).hostname, port: Number(new URL(url).port || 6379) });

/** Counts BullMQ's `stalled` events of one queue (any worker's stalled-job checker emits them). */
async function watchStalls(url: string, prefix: string): Promise<{ stalled: string[]; close(): Promise<void> }> {
  const events = new QueueEvents('jobs', { connection: connectionTo(url), prefix });
  const stalled: string[] = [];
  events.on('stalled', ({ jobId }) => stalled.push(jobId));
  await events.waitUntilReady();
  return { stalled, close: () => events.close() };
}

/**
 * Fault 6, the negative control: a CPU job run inline in a BullMQ processor blocks the worker's event
 * loop, so its lock lapses; the job is marked stalled and runs again (or fails as stalled too often).
 * The template's worker, same lock, same load, keeps its loop free: every job runs exactly once.
 */
describe('event loop under saturation: inline processor vs the template', () => {
  const url = process.env.E2E_REDIS_URL!;
  const procs: AppProcess[] = [];

  afterAll(async () => {
    await Promise.all(procs.map((p) => p.stop()));
  });

  it('an inline processor stalls and runs jobs twice; the template runs each exactly once', async () => {
    // --- The control: two plain BullMQ workers computing inline (two, so someone's stalled-checker runs).
    const prefix = uniquePrefix('chaos-inline');
    const stalls = await watchStalls(url, prefix);
    const fixture = join(__dirname, 'fixtures', 'inline-worker.js');
    const inline = [1, 2].map(() => startScript(fixture, { REDIS_URL: url, REDIS_PREFIX: prefix, LOCK_MS: String(LOCK_MS) }));
    procs.push(...inline);
    const queue = new Queue('jobs', { connection: connectionTo(url), prefix });
    let inlineFinal: Array<{ id: string; state: string; reason?: string }> = [];
    try {
      await waitFor(() => inline.every((p) => p.logs.some((l) => l.msg === 'ready')), { what: 'inline workers ready' });
      const jobs = await Promise.all(Array.from({ length: JOBS }, (_, i) => queue.add('chaos', { input: { mode: 'spin', ms: SPIN_MS, tag: `inline-${i}` } })));
      // Until every job has finished one way or the other (a stalled job is retried at most once).
      await waitFor(
        async () => {
          const states = await Promise.all(jobs.map((j) => queue.getJobState(j.id!)));
          return states.every((s) => s === 'completed' || s === 'failed');
        },
        { timeoutMs: 45_000, intervalMs: 250, what: 'inline jobs to finish' },
      );
      inlineFinal = await Promise.all(
        jobs.map(async (j) => {
          const job = (await queue.getJob(j.id!))!;
          return { id: j.id!, state: await job.getState(), reason: job.failedReason };
        }),
      );
    } finally {
      await Promise.all(inline.map((p) => p.stop()));
      // why: the control's jobs live under a prefix of their own in the shared Redis; leave nothing behind.
      await queue.obliterate({ force: true }).catch(() => undefined);
      await Promise.all([queue.close(), stalls.close()]);
    }
    const inlineRuns = executions(inline);
    const inlineTotal = [...inlineRuns.values()].reduce((a, b) => a + b, 0);
    const inlineTwice = [...inlineRuns.values()].filter((n) => n > 1).length;
    const stalledFailures = inlineFinal.filter((j) => j.state === 'failed' && /stalled|lock/i.test(j.reason ?? '')).length;
    const lockErrors = inline.flatMap((p) => p.logs).filter((l) => l.msg === 'worker error' && /lock/i.test(String(l.err))).length;

    // --- The template: API + two workers, same lock, same load, one thread each.
    const env = stackEnv('chaos-template-stall', { JOB_LOCK_MS: String(LOCK_MS), WORKER_THREADS: '1' });
    const templateStalls = await watchStalls(url, env.REDIS_PREFIX!);
    const [api, w1, w2] = await Promise.all([startApp('api', env), startApp('worker', env), startApp('worker', env)]);
    procs.push(api, w1, w2);
    const ledger = new Ledger('stall control (template)');
    const run = Date.now().toString(36);
    await Promise.all(Array.from({ length: JOBS }, (_, i) => ledger.submit(api.url, 'chaos', { mode: 'spin', ms: SPIN_MS, tag: `template-${run}-${i}` })));
    const summary = await ledger.check(api.url, [w1, w2], { timeoutMs: 45_000 }).finally(() => templateStalls.close());
    console.log(
      `[stall-control] inline: jobs=${JOBS} executions=${inlineTotal} ranTwice=${inlineTwice} stalledEvents=${stalls.stalled.length} ` +
        `stalledFailures=${stalledFailures} lockErrors=${lockErrors} final=${inlineFinal.map((j) => j.state).join('/')} ` +
        `reasons=${JSON.stringify([...new Set(inlineFinal.map((j) => j.reason).filter(Boolean))])} | ` +
        `template: jobs=${JOBS} executions=${summary.executions} duplicates=${summary.duplicates} stalledEvents=${templateStalls.stalled.length}`,
    );
    ledger.print(summary, { stalledEvents: templateStalls.stalled.length });

    // The control shows the failure mode is real on this machine …
    expect(stalls.stalled.length).toBeGreaterThan(0);
    expect(inlineTwice + stalledFailures).toBeGreaterThan(0);
    // … and the template does not have it.
    expect(templateStalls.stalled).toEqual([]);
    expect(summary.problems).toEqual([]);
    expect(summary.lost).toBe(0);
    expect(summary.duplicates).toBe(0);
    expect(summary.executions).toBe(JOBS);
  }, 150_000);
});
