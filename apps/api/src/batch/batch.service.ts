import { Inject, Injectable } from '@nestjs/common';
import { CONFIG, type Config } from '@app/config';
import { canonicalJson, JobDefinition } from '@app/jobs';
import { childJobId } from '@app/queue';
import { ApiError } from '../http/api-error';
import { Problem, toProblem } from '../http/problem';
import { PreparedJob, prepareJob } from '../jobs/job-input';
import type { JobWatch } from '../jobs/job-notices';
import { JobReads } from '../jobs/job-reads';
import { isFinal, JobView, viewOfJob } from '../jobs/job-view';
import { JobsService, SubmitOptions } from '../jobs/jobs.service';
import { type Claim, SubmitHooks } from '../jobs/submit-hooks';
import { SubmitPipeline } from '../jobs/submit-pipeline';
import { SubmissionMetrics, type SubmissionOutcome } from '../jobs/submission.metrics';
import { JobQueues, type JobsQueue } from '../queues/queue.providers';
import type { Caller } from '../security/caller';
import { batchItems, groupWork, WorkGroup } from './batch-plan';

/** One item's answer: its job's view (and its watch, when the caller waits), or why it got none. */
export type BatchEntry = { view: JobView; watch?: JobWatch } | { problem: Problem };

/** What a batch's Idempotency-Key remembers per item: the job id, or the problem. */
type RecordedEntry = string | Problem;

const problemOf = (error: unknown): Problem => toProblem(error).body;

/**
 * POST /v1/jobs/{type}/batch: validates every item, charges the rate limit per item, joins identical
 * items within the batch, and hands the distinct work to the submit pipeline that single
 * submissions take too (one cache lookup, one addBulk: one round trip each). Items fail alone.
 */
@Injectable()
export class BatchService {
  constructor(
    private readonly jobs: JobsService,
    private readonly reads: JobReads,
    private readonly pipeline: SubmitPipeline,
    private readonly queues: JobQueues,
    private readonly hooks: SubmitHooks,
    private readonly metrics: SubmissionMetrics,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  /** The entry of each item, in order; with `Prefer: wait`, once every job finished or the time is up. */
  async submit(type: string, body: unknown, options: SubmitOptions & { caller: Caller }): Promise<BatchEntry[]> {
    const def = this.jobs.definition(type);
    if (Object.keys(def.files).length > 0) throw new ApiError('UNSUPPORTED_MEDIA_TYPE', `"${def.name}" takes files: submit each job as multipart/form-data to POST /v1/jobs/${def.name}`);
    const items = batchItems(body, this.config.batchMaxItems);
    const prepared = items.map((item) => {
      try {
        return prepareJob(def, item, options.scope);
      } catch (error) {
        return error as ApiError;
      }
    });
    options.timing?.mark('validate');
    this.reads.assertRedisUp();
    const queue = this.queues.get(def.queue);
    let entries: BatchEntry[];
    if (!options.idempotency) entries = await this.accept(def, prepared, options);
    else {
      const request = [
        `POST /v1/jobs/${type}/batch`,
        ...prepared.map((item, i) => (item instanceof ApiError ? `invalid:${canonicalJson(items[i])}` : item.inputJson)),
        ...(options.callbackUrl ? [`callback ${options.callbackUrl}`] : []),
      ];
      let fresh: BatchEntry[] | undefined;
      const result = await this.hooks.idempotency.once(options.idempotency, request, async (claim) => {
        fresh = await this.accept(def, prepared, { ...options, waitSeconds: 0 }, claim);
        return JSON.stringify(fresh.map((entry): RecordedEntry => ('problem' in entry ? entry.problem : entry.view.id)));
      });
      entries = fresh ?? (await this.replay(JSON.parse(result) as RecordedEntry[], queue, options.scope));
    }
    if (options.waitSeconds > 0) {
      entries = await this.waitForAll(entries, options.waitSeconds * 1000, queue);
      options.timing?.mark('wait');
    }
    return entries;
  }

  /**
   * Answers each item: invalid, over the rate limit, or through the submit pipeline. Under an
   * Idempotency-Key's claim, new jobs get ids derived from its planned id and the item, so a
   * takeover adds the same ones (and reads their views: the request that died may have added them).
   */
  private async accept(def: JobDefinition, prepared: ReadonlyArray<PreparedJob | ApiError>, options: SubmitOptions & { caller: Caller }, claim?: Claim): Promise<BatchEntry[]> {
    const { caller, submission, timing, waitSeconds, scope } = options;
    const entries = new Array<BatchEntry>(prepared.length);
    // Each item counts like a single submission in jobs_submitted_total; repeats within the batch join.
    const count = (outcome: SubmissionOutcome, items = 1) => {
      for (let i = 0; i < items; i++) this.metrics.submission(def.name, outcome);
    };
    prepared.forEach((item, i) => item instanceof ApiError && (entries[i] = { problem: problemOf(item) }) && count('rejected'));
    const answer = (group: WorkGroup, entry: BatchEntry, outcome: SubmissionOutcome) => {
      group.items.forEach((i) => (entries[i] = entry));
      // The group's first item got the outcome; its repeats join a queued job, or share the rest.
      count(outcome);
      count(outcome === 'queued' ? 'joined' : outcome, group.items.length - 1);
    };

    // The request itself paid for one item at the door; the rest are charged here.
    const { granted, retryAfterSeconds } = prepared.length > 1 ? await caller.charge(prepared.length - 1) : { granted: 0, retryAfterSeconds: 0 };
    const paid = 1 + granted;
    for (let i = paid; i < prepared.length; i++) {
      const detail = `Over the rate limit: ${paid} of the batch's ${prepared.length} items fit; resubmit the rest in ${retryAfterSeconds} s`;
      entries[i] = { problem: problemOf(new ApiError('RATE_LIMITED', detail)) };
      count('rejected');
    }

    const groups = groupWork(prepared, paid);
    if (groups.length === 0) return entries;
    const outcomes = await this.pipeline.accept(
      def,
      groups.map((group) => group.job),
      {
        scope,
        submission,
        timing,
        wait: waitSeconds > 0,
        // why childJobId: it derives a UUID from an id and an index, as fan-out does for its chunks.
        idFor: claim && ((i) => childJobId(claim.plannedId, groups[i].items[0])),
        takeover: claim?.takeover,
        adding: claim?.adding,
      },
    );
    const queue = this.queues.get(def.queue);
    await Promise.all(
      outcomes.map(async (outcome, i) => {
        const group = groups[i];
        if (outcome.kind === 'rejected') return answer(group, { problem: problemOf(outcome.error) }, 'rejected');
        if (outcome.kind !== 'joined') return answer(group, outcome.kind === 'queued' ? { view: outcome.view, watch: outcome.watch } : { view: outcome.view }, outcome.kind);
        // Joined an identical job already queued or running (or just finished): its view now.
        const entry = await this.reads.get(outcome.id, undefined, queue).then(
          (view): BatchEntry => ({ view, watch: outcome.watch }),
          (error: unknown): BatchEntry => (outcome.watch?.close(), { problem: problemOf(error) }),
        );
        answer(group, entry, 'joined');
      }),
    );
    return entries;
  }

  /**
   * A retry under a batch's Idempotency-Key: the same jobs' views now, as the caller of `scope` may
   * see them (a job it withdrew from is cancelled for it), and the same problems.
   */
  private async replay(recorded: RecordedEntry[], queue: JobsQueue, scope: string): Promise<BatchEntry[]> {
    const views = new Map<string, Promise<BatchEntry>>();
    for (const entry of recorded) {
      if (typeof entry === 'string' && !views.has(entry)) {
        const view = this.reads.get(entry, undefined, queue).then((found) => this.reads.asSeenBy(found, scope));
        views.set(entry, view.then((seen) => ({ view: seen }), (error: unknown) => ({ problem: problemOf(error) })));
      }
    }
    return Promise.all(recorded.map((entry) => (typeof entry === 'string' ? views.get(entry)! : { problem: entry })));
  }

  /** Waits up to `timeoutMs` for every job of the batch to finish; each entry gets its latest view. */
  private async waitForAll(entries: BatchEntry[], timeoutMs: number, queue: JobsQueue): Promise<BatchEntry[]> {
    const finals = new Map<string, Promise<JobView>>();
    for (const entry of entries) {
      if (!('view' in entry) || finals.has(entry.view.id)) continue;
      const { view, watch } = entry;
      if (isFinal(view)) {
        watch?.close();
        continue;
      }
      // A watch from the pipeline listened before the job could end; without one, watch and read it now.
      const until = watch
        ? watch.until(timeoutMs, (state) => this.reads.get(view.id, state, queue), isFinal, viewOfJob, view)
        : this.reads.waitUntilFinal(view.id, timeoutMs, undefined, queue);
      finals.set(view.id, until.catch(() => view));
    }
    const latest = new Map(await Promise.all([...finals].map(async ([id, view]) => [id, await view] as const)));
    return entries.map((entry) => ('view' in entry && latest.has(entry.view.id) ? { view: latest.get(entry.view.id)! } : entry));
  }
}
