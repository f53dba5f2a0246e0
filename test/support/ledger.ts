import { canonicalJson } from '@app/jobs';
import type { AppProcess } from './apps';
import { getJob, type Reply, resultOf, submit } from './http';
import { stallReport } from './stall-report';
import { sleep } from './wait';

/** What a job is expected to end as: `completed` with the right result (default), or `failed` with a code. */
export type Outcome = { status: 'completed' } | { status: 'failed'; code: string };

/** One job the API accepted (answered 200 or 202): the measure of "nothing lost". */
export interface Accepted {
  id: string;
  type: string;
  input: any;
  acceptedAt: number;
  /** True when the API answered from the result cache (the job ran before, for an earlier caller). */
  cached: boolean;
  expect: Outcome;
  /** How many executions the contract allows without calling them duplicates (retries of a crash count). */
  runs: number;
}

/** The view a job ended with, or why it did not end. */
export interface Settled {
  entry: Accepted;
  view?: any;
  verdict: 'completed' | 'failed-as-expected' | 'wrong-result' | 'unexpected-failure' | 'not-final' | 'not-found';
}

export interface Summary {
  accepted: number;
  completed: number;
  failed: number;
  lost: number;
  executions: number;
  duplicates: number;
  /** Jobs run more often than `runs` allows, with their execution counts. */
  duplicated: Array<{ id: string; runs: number }>;
  problems: Array<{ id: string; type: string; verdict: Settled['verdict']; view?: unknown }>;
}

function fib(n: number): number {
  let [a, b] = [0, 1];
  for (let i = 0; i < n; i++) [a, b] = [b, a + b];
  return a;
}

/** The result a job must have produced, computed here independently of the apps. */
export function expectedResult(type: string, input: any): unknown {
  switch (type) {
    case 'fibonacci':
      return fib(input.n);
    case 'echo':
    case 'private-echo':
      return { choice: 'a', ...input };
    case 'spin':
      return { ms: input.ms ?? 0, tag: input.tag };
    case 'fan-out':
      return { parts: input.parts, ms: input.parts * (input.ms ?? 0) };
    case 'chaos':
      // `attempt` depends on how many tries it took; the rest is fixed by the input.
      return { mode: input.mode, ms: input.ms ?? 0 };
    default:
      throw new Error(`no expected result for job type ${type}`);
  }
}

function resultMatches(type: string, input: any, result: any): boolean {
  const expected = expectedResult(type, input);
  if (type === 'chaos') return result?.mode === (expected as any).mode && result?.ms === (expected as any).ms;
  // why canonical JSON: what a result is once it went through JSON (key order aside, -0 is 0, undefined fields gone).
  return canonicalJson(result) === canonicalJson(expected);
}

/** How many times each job id was started, from the `job started` log lines of these workers. */
export function executions(workers: Array<AppProcess | undefined>): Map<string, number> {
  const runs = new Map<string, number>();
  for (const worker of workers) {
    for (const line of worker?.logs ?? []) {
      if (line.msg === 'job started' && typeof line.jobId === 'string') runs.set(line.jobId, (runs.get(line.jobId) ?? 0) + 1);
    }
  }
  return runs;
}

/** Runs `tasks` with at most `concurrency` in flight. */
export async function inParallel<T, R>(items: readonly T[], concurrency: number, task: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const lanes = Array.from({ length: Math.min(concurrency, items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await task(items[i], i);
    }
  });
  await Promise.all(lanes);
  return results;
}

/**
 * The record of every job the API accepted, with its input, so a test can check after a fault that
 * each one ended as the contract says and count how often it ran.
 */
export class Ledger {
  readonly entries = new Map<string, Accepted>();
  /** Submissions the API refused, by HTTP status (503 during an outage, …). */
  readonly refused = new Map<number, number>();

  /**
   * `headers`, when the API has keys: the owner's (`x-api-key`), with which this ledger submits and
   * reads every job back, so a job whose owner record was lost counts as lost (the API answers 404).
   */
  constructor(
    readonly name: string,
    readonly headers?: Record<string, string>,
  ) {}

  /** POSTs one job and records it when the API accepts it (200 or 202). */
  async submit(
    api: string,
    type: string,
    input: unknown,
    options: { wait?: number; expect?: Outcome; runs?: number; headers?: Record<string, string> } = {},
  ): Promise<Reply> {
    const reply = await submit(api, type, input, { wait: options.wait, headers: options.headers ?? this.headers });
    this.record(reply, type, input, options);
    return reply;
  }

  /** Records `reply` if it accepted the job. */
  record(reply: Reply, type: string, input: unknown, options: { expect?: Outcome; runs?: number } = {}): void {
    if (reply.status === 200 || reply.status === 202) {
      const id = reply.body.id as string;
      // why: identical inputs join one job (single flight); the ledger keeps the first submission.
      if (!this.entries.has(id)) {
        this.entries.set(id, {
          id,
          type,
          input,
          acceptedAt: Date.now(),
          cached: reply.body.cached === true,
          expect: options.expect ?? { status: 'completed' },
          runs: options.runs ?? 1,
        });
      }
    } else {
      this.refused.set(reply.status, (this.refused.get(reply.status) ?? 0) + 1);
    }
  }

  get ids(): string[] {
    return [...this.entries.keys()];
  }

  /**
   * Polls every accepted job until all have finished (completed, failed or cancelled), are unknown
   * to the API (404: lost, e.g. to a failover) or `timeoutMs` passes. Reads that fail (Redis briefly
   * away) are retried on the next round.
   */
  async settle(api: string, { timeoutMs = 60_000 }: { timeoutMs?: number } = {}): Promise<Map<string, any>> {
    const views = new Map<string, any>();
    const deadline = Date.now() + timeoutMs;
    const open = () => this.ids.filter((id) => !['completed', 'failed', 'cancelled', 'not-found'].includes(views.get(id)?.status));
    for (;;) {
      const waiting = open();
      if (waiting.length === 0 || Date.now() > deadline) return views;
      await inParallel(waiting, 16, async (id) => {
        const res = await getJob(api, id, this.headers).catch(() => undefined);
        // why resultOf: a result over 64 KiB is a file of the job (result.json), not a field of its view.
        if (res?.status === 200 && res.body.status === 'completed') {
          // A download that fails (Redis or the store briefly away) is retried on the next round.
          await resultOf(api, res.body, this.headers).then((result) => views.set(id, { ...res.body, result }), () => undefined);
        } else if (res?.status === 200) views.set(id, res.body);
        else if (res?.status === 404) views.set(id, { status: 'not-found' });
      });
      if (open().length > 0) await sleep(250);
    }
  }

  /** Settles every accepted job and checks its outcome and result; counts executions from the workers' logs. */
  async check(api: string, workers: Array<AppProcess | undefined>, options: { timeoutMs?: number } = {}): Promise<Summary> {
    const views = await this.settle(api, options);
    const open = this.ids.filter((id) => !['completed', 'failed', 'cancelled', 'not-found'].includes(views.get(id)?.status));
    // why here: a ledger that does not settle is the symptom of a stalled app; say what each was doing.
    if (open.length > 0) console.log(`[ledger] ${this.name}: ${open.length} jobs not final\n${await stallReport(workers)}`);
    const runs = executions(workers);
    const settled: Settled[] = [];
    for (const entry of this.entries.values()) {
      const view = views.get(entry.id);
      let verdict: Settled['verdict'];
      if (!view || view.status === 'not-found') verdict = view ? 'not-found' : 'not-final';
      else if (!['completed', 'failed', 'cancelled'].includes(view.status)) verdict = 'not-final';
      else if (entry.expect.status === 'failed') {
        verdict = view.status === 'failed' && view.error?.code === entry.expect.code ? 'failed-as-expected' : 'unexpected-failure';
      } else if (view.status !== 'completed') verdict = 'unexpected-failure';
      else verdict = resultMatches(entry.type, entry.input, view.result) ? 'completed' : 'wrong-result';
      settled.push({ entry, view, verdict });
    }
    const duplicated = settled
      .map(({ entry }) => ({ id: entry.id, runs: runs.get(entry.id) ?? 0, allowed: entry.runs }))
      .filter((r) => r.runs > r.allowed)
      .map(({ id, runs: n }) => ({ id, runs: n }));
    return {
      accepted: this.entries.size,
      completed: settled.filter((s) => s.verdict === 'completed').length,
      failed: settled.filter((s) => s.verdict === 'failed-as-expected').length,
      lost: settled.filter((s) => !['completed', 'failed-as-expected'].includes(s.verdict)).length,
      executions: this.ids.reduce((n, id) => n + (runs.get(id) ?? 0), 0),
      duplicates: duplicated.reduce((n, d) => n + d.runs - this.entries.get(d.id)!.runs, 0),
      duplicated,
      problems: settled
        .filter((s) => !['completed', 'failed-as-expected'].includes(s.verdict))
        .map((s) => ({ id: s.entry.id, type: s.entry.type, verdict: s.verdict, view: s.view })),
    };
  }

  /** One line with the figures, for the test output and the report. */
  print(summary: Summary, extra: Record<string, unknown> = {}): void {
    const refused = [...this.refused].map(([status, n]) => `${status}x${n}`).join(',') || 'none';
    const fields = { ...extra, refused };
    console.log(
      `[ledger] ${this.name}: accepted=${summary.accepted} completed=${summary.completed} failed=${summary.failed} ` +
        `lost=${summary.lost} executions=${summary.executions} duplicates=${summary.duplicates} ` +
        Object.entries(fields)
          .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
          .join(' ') +
        (summary.problems.length ? `\n  problems: ${JSON.stringify(summary.problems.slice(0, 5))}` : ''),
    );
  }
}
