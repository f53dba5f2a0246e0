import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { Registry } from 'prom-client';
import { CONFIG, type Config } from '@app/config';
import { JobRegistry } from '@app/jobs';
import { type Logger, LOGGER } from '@app/logging';
import { BoundCounter, type BoundSeries, METRICS } from '@app/metrics';
import { POP_DUE, startDeadlinesKey } from '@app/queue';
import { RedisConnections, type RedisClient } from '@app/redis';
import { JobQueues, type JobsQueue } from '../queues/queue.providers';
import { JobNotices } from './job-notices';
import { JobOwners } from './job-owners';
import { JobStore } from './job-store';
import { viewOfExpired, viewOfJob } from './job-view';

/**
 * The longest a replica goes without looking at the deadline sets. why: the deadlines this replica
 * wrote wake it on time; this finds, within a second, those whose submitting replica has gone.
 */
const IDLE_MS = 1000;
/** Deadlines popped at once; a pass goes on while a pop comes back full. */
const POP = 200;
/** BullMQ's states of a job no worker holds (a version hand-back waits in `delayed`). */
const QUEUED_STATES = new Set(['waiting', 'prioritized', 'delayed']);

/**
 * Ends the jobs still queued at their start deadline (docs/api.md#start-deadlines), with or without
 * workers running. A replica passes over its queues' deadline sets when a deadline it wrote falls
 * due, when the last pass saw one due next, and at least every IDLE_MS; each pop is atomic, so one
 * replica gets each job. It removes each job no attempt has ended for yet, as a cancel removes a
 * queued one, keeping its `expired` view for JOB_RETENTION_SECONDS. A job a worker holds is left to
 * it: the worker checks the deadline before it runs anything (JobProcessor). Counts
 * `nest_offload_jobs_expired_total{type}` for the jobs it removed.
 */
@Injectable()
export class JobExpiry implements OnApplicationBootstrap, OnApplicationShutdown {
  /** why a connection of its own: its passes, a few a second however idle, stay off the request path's. */
  private readonly redis: RedisClient;
  private timer?: NodeJS.Timeout;
  /** When the armed timer fires (epoch ms). */
  private wakeAt = Infinity;
  private passing = Promise.resolve();
  private stopped = false;
  private failing = false;
  private readonly expired = new Map<string, BoundSeries>();
  private readonly logger: Logger;

  constructor(
    private readonly queues: JobQueues,
    private readonly store: JobStore,
    private readonly notices: JobNotices,
    private readonly owners: JobOwners,
    connections: RedisConnections,
    @Inject(CONFIG) private readonly config: Config,
    @Inject(LOGGER) logger: Logger,
    metrics: Registry,
    registry: JobRegistry,
  ) {
    this.redis = connections.open('deadlines', config.queueRedis, 'request', 'nest-offload:api-deadlines');
    this.logger = logger.child({ context: JobExpiry.name });
    const counter = new BoundCounter({
      name: METRICS.jobsExpired,
      help: 'Jobs that ended expired, never started: by type (API: removed while queued; worker: found past the deadline when picked up)',
      labelNames: ['type'],
      registers: [metrics],
    });
    for (const { name: type } of registry.list()) this.expired.set(type, counter.bind({ type }));
  }

  onApplicationBootstrap(): void {
    this.wake(Date.now() + IDLE_MS);
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.passing;
  }

  /** A job this replica added must start by `startBy` (epoch ms): a pass then ends it if it has not. */
  wake(at: number): void {
    if (this.stopped || at >= this.wakeAt) return;
    clearTimeout(this.timer);
    this.wakeAt = at;
    this.timer = setTimeout(() => {
      this.wakeAt = Infinity;
      this.passing = this.passing.then(() => this.pass());
    }, Math.max(0, at - Date.now()));
    this.timer.unref();
  }

  /** Pops and ends what is due in every queue, then sleeps until the next deadline seen (IDLE_MS at most). */
  private async pass(): Promise<void> {
    let next = Date.now() + IDLE_MS;
    // why: with Redis away (or not yet connected) every command fails at once; readiness says so already.
    if (this.redis.status === 'ready') {
      try {
        for (const queue of this.queues.list()) next = Math.min(next, await this.popDue(queue));
        if (this.failing) this.logger.info('start deadlines are enforced again');
        this.failing = false;
      } catch (error) {
        if (!this.failing) this.logger.warn({ err: error }, 'could not enforce start deadlines; retrying');
        this.failing = true;
      }
    }
    this.wake(next);
  }

  /** Ends the jobs of `queue` due by now; resolves with its next deadline (Infinity: none). */
  private async popDue(queue: JobsQueue): Promise<number> {
    const key = startDeadlinesKey(this.config.redisPrefix, queue.name);
    for (;;) {
      const [next, ...due] = (await POP_DUE.run(this.redis, key, Date.now(), POP)) as string[];
      await Promise.all(due.map((id) => this.expire(id, queue)));
      if (due.length < POP) return next === '' || next === 'inf' ? Infinity : Number(next);
    }
  }

  /**
   * Removes job `id` if it is still queued and no attempt of it has ended: started, finished or gone,
   * its deadline no longer applies (a job put back without a run, by a worker shutting down or
   * waiting for a newer version, has had no attempt end and still expires).
   */
  private async expire(id: string, queue: JobsQueue): Promise<void> {
    const { record, state } = await this.store.read(id, undefined, queue);
    if (!record || !QUEUED_STATES.has(state) || record.attemptsMade > 0) return;
    // false: a worker took it meanwhile, and checks the deadline itself.
    if (!(await this.store.removeQueued(id, queue))) return;
    await this.store.saveRemoved(viewOfExpired(viewOfJob(record, state)));
    this.expired.get(record.name)?.inc();
    // Whoever waits on it (Prefer: wait, an event stream, a webhook delivery) reads the expired view.
    await Promise.all([this.notices.notifySettled(queue.name, id), this.owners.finished(queue.name, id, this.config.jobRetentionSeconds)]);
  }
}
