import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { type CachedResult, ResultCache } from '@app/cache';
import { CONFIG, type Config } from '@app/config';
import type { JobDefinition } from '@app/jobs';
import { extendDeadline, NO_DEADLINE, type ParkedJob, startDeadlinesKey } from '@app/queue';
import type { RedisClient } from '@app/redis';
import { ApiError } from '../http/api-error';
import type { ServerTiming } from '../http/server-timing';
import { Backlog } from './backlog';
import type { PreparedJob } from './job-input';
import { JobExpiry } from './job-expiry';
import { JobNotices, type JobWatch } from './job-notices';
import { JobOwners } from './job-owners';
import { iso, type JobView, viewOfCached } from './job-view';
import { newJob, startDeadline, type Submission } from './new-job';
import type { Outcome } from './outcome';
import { JobQueues, QUEUE_REDIS } from '../queues/queue.providers';
import { ReplicaAck } from './replica-ack';
import { SubmissionMetrics } from './submission.metrics';
import { SubmitHooks } from './submit-hooks';

export interface AcceptOptions {
  /** The caller: with API keys, every job it gets counts it among its owners. */
  scope: string;
  submission: Submission;
  /** The caller waits (`Prefer: wait`): listen to each job before it can end. */
  wait: boolean;
  timing?: ServerTiming;
  /** The id a new job of `jobs[index]` gets (an Idempotency-Key's planned ids, a dead letter's replay's); a fresh UUID otherwise. */
  idFor?: (index: number) => string;
  /** A job under a planned id may exist already (an Idempotency-Key's claim taken over, a dead letter replayed again). */
  takeover?: boolean;
  /** Called right before the add (see Claim.adding). */
  adding?: () => void;
}

/**
 * The one way work enters the queue, for single and batch submissions alike: the cache lookup (one
 * GET, or one round trip for a batch), admission (MAX_BACKLOG), then one add (or addBulk) with the
 * job's owner and, for a waiting caller, its watcher written on the same connection, in the same
 * round trip; with REDIS_MIN_REPLICAS_ACK, one WAIT. Returns an outcome per job, in order, and
 * counts the cache lookups; what a submission as a whole became is the caller's to count.
 */
@Injectable()
export class SubmitPipeline {
  constructor(
    private readonly queues: JobQueues,
    private readonly cache: ResultCache,
    private readonly backlog: Backlog,
    private readonly notices: JobNotices,
    private readonly owners: JobOwners,
    private readonly replicas: ReplicaAck,
    private readonly metrics: SubmissionMetrics,
    private readonly expiry: JobExpiry,
    private readonly hooks: SubmitHooks,
    @Inject(QUEUE_REDIS) private readonly redis: RedisClient,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  async accept(def: JobDefinition, jobs: readonly PreparedJob[], options: AcceptOptions): Promise<Outcome[]> {
    const outcomes = new Array<Outcome>(jobs.length);
    const tags = options.submission.tags ?? [];
    const { shares } = this.hooks;
    const caller = shares.callerOf(options.scope);
    // why beside the cache lookup: the caller's count costs no round trip of its own.
    const [cached, share] = await Promise.all([this.lookUp(def, jobs), caller === undefined ? undefined : shares.queued(def.queue, caller)]);
    options.timing?.mark('cache');
    const work: number[] = [];
    jobs.forEach((_, i) => {
      const hit = cached[i];
      if (hit) outcomes[i] = { kind: 'cached', view: viewOfCached(hit) };
      else work.push(i);
    });
    // The caller may read a cached result by its id from now on, like the caller whose job produced it.
    const hits = cached.filter((hit) => hit !== undefined);
    if (work.length === 0) {
      await this.owners.add(def.queue, [], options.scope, hits, tags);
      return outcomes;
    }

    const queue = this.queues.get(def.queue);
    // CALLER_MAX_QUEUED first: a caller past its own limit is told so, and takes nothing of MAX_BACKLOG.
    const room = share && share.max > 0 ? Math.max(0, share.max - share.queued) : work.length;
    const callerAdmitted = Math.min(work.length, room);
    for (const i of work.slice(callerAdmitted)) {
      const detail = `${share!.queued} of your jobs are waiting in queue "${queue.name}", which takes at most ${share!.max} per caller; ${jobs.length === 1 ? 'retry later' : `${callerAdmitted} of this batch's ${work.length} new jobs were accepted; resubmit the rest later`}`;
      outcomes[i] = { kind: 'rejected', error: new ApiError('CALLER_BACKLOG_FULL', detail, { retryAfterSeconds: 5 }) };
    }
    const { admitted, backlog } = await this.backlog.admit(queue, callerAdmitted);
    for (const i of work.slice(admitted, callerAdmitted)) {
      const detail =
        jobs.length === 1
          ? `${backlog} jobs are waiting in queue "${queue.name}"; retry later`
          : `${backlog} jobs are waiting in queue "${queue.name}"; ${admitted} of this batch's ${work.length} new jobs were accepted; resubmit the rest later`;
      outcomes[i] = { kind: 'rejected', error: new ApiError('BACKLOG_FULL', detail, { retryAfterSeconds: 5 }) };
    }
    const adding = work.slice(0, admitted).map((i) => ({ i, id: options.idFor?.(i) ?? randomUUID() }));
    if (adding.length === 0) {
      await this.owners.add(def.queue, [], options.scope, hits, tags);
      return outcomes;
    }

    const submitter = this.queues.submitter(def.queue);
    const connection = this.queues.submitConnection;
    // Every watch this submission opens; if any step fails, the caller gets no outcome, so all close.
    const watches: JobWatch[] = [];
    const watch = (id: string) => {
      const opened = this.notices.watch(id);
      watches.push(opened);
      return opened;
    };
    const closeAll = (error: unknown): never => {
      watches.forEach((opened) => opened.close());
      throw error;
    };
    // Fair share parks the caller's new jobs in the same write as the add, right after it: BullMQ's
    // add sends its script within this turn's promise jobs, and this runs after them (setImmediate),
    // before the write leaves (cork.ts uncorks later, in a setImmediate queued after this one when
    // this turn's first command is the watcher's or the owners' below). Should the add go out later
    // after all, the park finds fewer of the jobs than the add made, and is sent again after it.
    let toPark: ParkedJob[] = [];
    const early =
      caller === undefined
        ? undefined
        : new Promise<number>((resolve, reject) => setImmediate(() => shares.park(connection, def.queue, caller, toPark).then(resolve, reject)));
    // why listen first, and the watchers on the add's own connection: a job can end as soon as it is
    // added; Redis runs a connection's commands in order, so the worker that ends it finds the watcher.
    const planned = options.wait ? adding.map(({ id }) => watch(id)) : [];
    const ids = adding.map(({ id }) => id);
    const mark = this.replicas.mark(queue);
    // The watchers, the deadlines, the owners and the add leave on the submit connection, in one
    // write (coalesceWrites in libs/redis), so one WAIT after them covers them all.
    const alongside: Array<Promise<unknown>> = options.wait ? ids.map((id) => this.notices.register(def.queue, id, connection)) : [];
    const startBy = startDeadline(def, options.submission);
    const deadlines = startDeadlinesKey(this.config.redisPrefix, def.queue);
    if (startBy !== undefined) {
      alongside.push(connection.zadd(deadlines, ...adding.flatMap(({ id }) => [startBy, id])));
      this.expiry.wake(startBy);
    }
    options.adding?.();
    const newJobs = adding.map(({ i, id }) => newJob(jobs[i], id, options.submission, this.config.jobRetentionSeconds, startBy, caller));
    toPark = adding.map(({ id }, n) => ({ id, priority: newJobs[n].opts.priority ?? 0 }));
    const [added, seen] = await Promise.all([
      newJobs.length === 1 ? submitter.add(newJobs[0].name, newJobs[0].data, newJobs[0].opts).then((job) => [job]) : submitter.addBulk(newJobs),
      early,
      this.owners.add(def.queue, ids, options.scope, hits, tags),
      ...alongside,
    ]).catch(closeAll);
    if (caller !== undefined) {
      // The jobs this add created (not the ones it joined) wait in the caller's share until released.
      const parked = added.flatMap((job, n) => (job.id === adding[n].id ? [toPark[n]] : []));
      if (parked.length > (seen ?? 0)) await shares.park(connection, def.queue, caller, parked).catch(closeAll);
    }
    options.timing?.mark('enqueue');
    // One WAIT covers them all: they were written on one connection, before it, in the queue's slot.
    // A joined job too: joining wrote a "deduplicated" event after the job it joined.
    await this.replicas.confirm(queue, added.at(-1)!.id!, mark, options.timing).catch(closeAll);

    const joined: string[] = [];
    const unused: string[] = [];
    added.forEach((job, n) => {
      const { i, id } = adding[n];
      if (job.id === id && !options.takeover) {
        const view: JobView = { id, type: def.name, status: 'queued', attempts: 0, createdAt: iso(job.timestamp)! };
        outcomes[i] = { kind: 'queued', view, watch: planned[n] };
        return;
      }
      // An identical job queued or running (or just finished): the caller gets that one.
      planned[n]?.close();
      if (job.id !== id) {
        joined.push(job.id!);
        // why not an Idempotency-Key's planned id: a request taking over the key adds under that id too.
        if (!options.idFor) unused.push(id);
      }
      outcomes[i] = { kind: 'joined', id: job.id!, watch: options.wait ? watch(job.id!) : undefined };
    });
    if (joined.length > 0) {
      // The joined jobs were added by others: this replica becomes their watcher before anyone reads
      // them, keeps them wanted until its own deadline, and the caller becomes one of their owners,
      // as durably as the add (the same connection, then WAIT). The fresh ids it planned instead never
      // named a job: their owner, deadline and watcher records go, in the same write (else every join
      // left a set for 7 days).
      const joinMark = this.replicas.mark(queue);
      await Promise.all([
        this.owners.add(def.queue, joined, options.scope, [], tags),
        this.owners.forget(def.queue, unused, options.scope, tags),
        ...joined.map((id) => extendDeadline(this.redis, deadlines, id, startBy ?? NO_DEADLINE)),
        ...(startBy !== undefined && unused.length > 0 ? [this.redis.zrem(deadlines, ...unused)] : []),
        ...(options.wait ? [...joined.map((id) => this.notices.register(def.queue, id, connection)), this.notices.forget(def.queue, unused, connection)] : []),
      ]).catch(closeAll);
      await this.replicas.confirm(queue, joined.at(-1)!, joinMark, options.timing).catch(closeAll);
    }
    return outcomes;
  }

  /** The cached results of `jobs`, in order (misses and a cache Redis away alike undefined), counted. */
  private async lookUp(def: JobDefinition, jobs: readonly PreparedJob[]): Promise<Array<CachedResult | undefined>> {
    if (def.cacheTtlSeconds <= 0) return [];
    // why: the cache may be a separate Redis; when it is away, the jobs simply run again.
    const found: Array<CachedResult | undefined> | null =
      jobs.length === 1
        ? await this.cache.get(jobs[0].key).then((hit) => [hit], () => null)
        : await this.cache.getMany(jobs.map((job) => job.key)).catch(() => null);
    for (let i = 0; i < jobs.length; i++) this.metrics.cacheLookup(def.name, found === null ? 'error' : found[i] ? 'hit' : 'miss');
    return found ?? [];
  }
}
