import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { ResultCache } from '@app/cache';
import { CONFIG, type Config } from '@app/config';
import { canonicalJson, JobDefinition } from '@app/jobs';
import { childJobId } from '@app/queue';
import { ApiError } from '../http/api-error';
import { Problem, toProblem } from '../http/problem';
import { Claim, Idempotency } from '../idempotency/idempotency';
import { requestFingerprint } from '../idempotency/idempotency-key';
import { Backlog } from '../jobs/backlog';
import { JobEvents, JobWatch } from '../jobs/job-events';
import { JobOwners } from '../jobs/job-owners';
import { PreparedJob, prepareJob } from '../jobs/job-input';
import { isFinal, JobView, viewOfCached } from '../jobs/job-view';
import { JobsService, SubmitOptions } from '../jobs/jobs.service';
import { newJob } from '../jobs/new-job';
import { JobQueues, JobsQueue } from '../jobs/queue.providers';
import { ReplicaAck } from '../jobs/replica-ack';
import { SubmissionMetrics, type SubmissionOutcome } from '../jobs/submission.metrics';
import type { Caller } from '../security/caller';
import { batchItems, groupWork, WorkGroup } from './batch-plan';

/** One item's answer: its job's view, or why it got none. */
export type BatchEntry = { view: JobView; watch?: JobWatch } | { problem: Problem };

/** What a batch's Idempotency-Key remembers per item: the job id, or the problem. */
type RecordedEntry = string | Problem;

const problemOf = (error: unknown): Problem => toProblem(error).body;

/**
 * POST /v1/jobs/{type}/batch: validates every item, answers cache hits from one lookup, joins
 * identical work (within the batch, and with jobs in flight through BullMQ's deduplication), and
 * adds the rest with one addBulk: one pipeline, one round trip to Redis. Items fail alone; rate
 * limits and MAX_BACKLOG count items.
 */
@Injectable()
export class BatchService {
  constructor(
    private readonly jobs: JobsService,
    private readonly queues: JobQueues,
    private readonly cache: ResultCache,
    private readonly backlog: Backlog,
    private readonly events: JobEvents,
    private readonly idempotency: Idempotency,
    private readonly metrics: SubmissionMetrics,
    private readonly replicas: ReplicaAck,
    private readonly owners: JobOwners,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  /** The entry of each item, in order; with `Prefer: wait`, once every job finished or the time is up. */
  async submit(type: string, body: unknown, options: SubmitOptions & { caller: Caller }): Promise<BatchEntry[]> {
    const def = this.jobs.definition(type);
    const items = batchItems(body, this.config.batchMaxItems);
    const prepared = items.map((item) => {
      try {
        return prepareJob(def, item, options.scope);
      } catch (error) {
        return error as ApiError;
      }
    });
    options.timing?.mark('validate');
    this.jobs.assertRedisUp();
    let entries: BatchEntry[];
    if (!options.idempotency) entries = await this.accept(def, prepared, options);
    else {
      const fingerprint = requestFingerprint([
        `POST /v1/jobs/${type}/batch`,
        ...prepared.map((item, i) => (item instanceof ApiError ? `invalid:${canonicalJson(items[i])}` : item.inputJson)),
        ...(options.callbackUrl ? [`callback ${options.callbackUrl}`] : []),
      ]);
      let fresh: BatchEntry[] | undefined;
      const result = await this.idempotency.once(options.idempotency, fingerprint, async (claim) => {
        fresh = await this.accept(def, prepared, options, claim);
        return JSON.stringify(fresh.map((entry): RecordedEntry => ('problem' in entry ? entry.problem : entry.view.id)));
      });
      entries = fresh ?? (await this.replay(JSON.parse(result) as RecordedEntry[], this.queues.get(def.queue)));
    }
    // The caller owns every job its items got: new, joined or answered from the cache.
    await this.owners.add([...new Set(entries.flatMap((entry) => ('view' in entry ? [entry.view.id] : [])))], options.scope);
    if (options.waitSeconds > 0) {
      entries = await this.waitForAll(entries, options.waitSeconds * 1000, this.queues.get(def.queue));
      options.timing?.mark('wait');
    }
    return entries;
  }

  /**
   * Answers each item: cache hits, then one addBulk for the admitted work. Under an Idempotency-Key's
   * claim, new jobs get ids derived from its planned id and the item, so a takeover adds the same ones
   * (and reads their views: the request that died may have added them already).
   */
  private async accept(def: JobDefinition, prepared: ReadonlyArray<PreparedJob | ApiError>, options: SubmitOptions & { caller: Caller }, claim?: Claim): Promise<BatchEntry[]> {
    const { caller, submission, timing, waitSeconds } = options;
    // Every item is answered below: invalid here, then over the rate limit, cached, over the backlog, or queued.
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
    // why: the cache may be a separate Redis; when it is away, the jobs simply run again.
    const cached = def.cacheTtlSeconds > 0 ? await this.cache.getMany(groups.map((g) => g.job.key)).catch(() => []) : [];
    timing?.mark('cache');
    const work = groups.filter((group, i) => {
      const hit = cached[i];
      if (hit) answer(group, { view: viewOfCached(hit) }, 'cached');
      return !hit;
    });

    if (work.length === 0) return entries;
    const queue = this.queues.get(def.queue);
    const { admitted, backlog } = await this.backlog.admit(queue, work.length);
    for (const group of work.slice(admitted)) {
      const detail = `${backlog} jobs are waiting in queue "${queue.name}"; ${admitted} of this batch's ${work.length} new jobs were accepted; resubmit the rest later`;
      answer(group, { problem: problemOf(new ApiError('BACKLOG_FULL', detail)) }, 'rejected');
    }
    // why childJobId: it derives a UUID from an id and an index, as fan-out does for its chunks.
    const adding = work.slice(0, admitted).map((group) => ({ group, id: claim ? childJobId(claim.plannedId, group.items[0]) : randomUUID() }));
    if (adding.length === 0) return entries;

    // why subscribe first: a fast job could finish between the add and a later subscription.
    const watches = waitSeconds > 0 ? adding.map(({ id }) => this.events.watch(id)) : [];
    claim?.adding();
    const abandon = (error: unknown): never => {
      watches.forEach((watch) => watch.close());
      throw error;
    };
    const added = await this.queues
      .submitter(def.queue)
      .addBulk(adding.map(({ group, id }) => newJob(group.job, id, submission, this.config.jobRetentionSeconds)))
      .catch(abandon);
    timing?.mark('enqueue');
    // One WAIT covers the whole pipeline: it was written on the same connection, before it.
    await this.replicas.confirm(queue, added.at(-1)!.id!, timing).catch(abandon);
    await Promise.all(
      added.map(async (job, i) => {
        const { group, id } = adding[i];
        if (job.id === id && !claim?.takeover) {
          const view: JobView = { id, type: def.name, status: 'queued', attempts: 0, createdAt: new Date(job.timestamp).toISOString() };
          return answer(group, { view, watch: watches[i] }, 'queued');
        }
        // Joined an identical job already queued or running (or just finished) through deduplication.
        watches[i]?.close();
        answer(group, await this.jobs.get(job.id!, undefined, queue).then((view) => ({ view }), (error: unknown) => ({ problem: problemOf(error) })), 'joined');
      }),
    );
    return entries;
  }

  /** A retry under a batch's Idempotency-Key: the same jobs' views now, and the same problems. */
  private async replay(recorded: RecordedEntry[], queue: JobsQueue): Promise<BatchEntry[]> {
    const views = new Map<string, Promise<BatchEntry>>();
    for (const entry of recorded) {
      if (typeof entry === 'string' && !views.has(entry)) {
        views.set(entry, this.jobs.get(entry, undefined, queue).then((view) => ({ view }), (error: unknown) => ({ problem: problemOf(error) })));
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
      const load = (state?: string) => this.jobs.get(view.id, state, queue);
      // A watch from before the add may start from the queued view; one made now reads the job first.
      const until = (watch ?? this.events.watch(view.id)).until(timeoutMs, load, isFinal, watch ? view : undefined);
      finals.set(view.id, until.catch(() => view));
    }
    const latest = new Map(await Promise.all([...finals].map(async ([id, view]) => [id, await view] as const)));
    return entries.map((entry) => ('view' in entry && latest.has(entry.view.id) ? { view: latest.get(entry.view.id)! } : entry));
  }
}
