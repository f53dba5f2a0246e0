import { Inject, Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { CONFIG, type Config } from '@app/config';
import { Lifecycle } from '@app/health';
import { JobRegistry } from '@app/jobs';
import { type Logger, LOGGER } from '@app/logging';
import { type JobData, type ScheduledJob, scheduledJob } from '@app/queue';
import { JobQueues } from '../queues/queue.providers';

/** How long to wait before trying again when Redis is away at start-up. */
const RETRY_MS = 2000;

export interface ReconcileSummary {
  added: string[];
  updated: string[];
  removed: string[];
  unchanged: string[];
}

/**
 * Makes BullMQ's job schedulers match the schedules the job types declare, when the API starts:
 * adds new ones, updates changed ones, and removes the ones this service made whose declaration is
 * gone. Schedulers it did not make (no `schedule` in their job data) are left alone.
 *
 * why the API and not the workers: the API is where declarations become queued work (submissions
 * too), every replica opens every queue, and a worker release rolled out apart from the API's must
 * not fight it over what the schedule is. Every replica does it; BullMQ's scheduler is one record
 * per schedule in Redis, and the worker that takes a tick's job adds the next tick (atomically,
 * keyed by the tick's time), so each tick is one job however many replicas run.
 */
@Injectable()
export class ScheduleRegistrar implements OnApplicationBootstrap {
  readonly declared: readonly ScheduledJob[];
  private readonly logger: Logger;

  constructor(
    registry: JobRegistry,
    private readonly queues: JobQueues,
    private readonly lifecycle: Lifecycle,
    @Inject(CONFIG) config: Config,
    @Inject(LOGGER) logger: Logger,
  ) {
    this.logger = logger.child({ context: ScheduleRegistrar.name });
    this.declared = registry.list().flatMap((def) => def.schedules.map((s) => scheduledJob(def, s, config.jobRetentionSeconds)));
  }

  onApplicationBootstrap(): void {
    // why not awaited: with Redis away at start-up the API still starts (not ready) and registers once it can.
    void this.reconcileWhenReachable();
  }

  /** One pass over every queue; safe to run on several replicas at once. */
  async reconcile(): Promise<ReconcileSummary> {
    const summary: ReconcileSummary = { added: [], updated: [], removed: [], unchanged: [] };
    for (const queue of this.queues.list()) {
      const existing = await queue.getJobSchedulers();
      const wanted = this.declared.filter((s) => s.def.queue === queue.name);
      for (const s of wanted) {
        const current = existing.find((e) => e.key === s.id)?.template?.data as JobData | undefined;
        if (current?.schedule?.spec === s.data.schedule!.spec) {
          summary.unchanged.push(s.id);
          continue;
        }
        // why skip unchanged ones: re-registering moves a cron tick that is due but not yet taken.
        await queue.upsertJobScheduler(s.id, s.repeat, { name: s.def.name, data: s.data, opts: s.opts });
        (current ? summary.updated : summary.added).push(s.id);
      }
      for (const e of existing) {
        const ours = (e.template?.data as JobData | undefined)?.schedule !== undefined;
        if (ours && !wanted.some((s) => s.id === e.key)) {
          await queue.removeJobScheduler(e.key);
          summary.removed.push(e.key);
        }
      }
    }
    return summary;
  }

  private async reconcileWhenReachable(): Promise<void> {
    for (let attempt = 1; !this.lifecycle.shuttingDown; attempt++) {
      try {
        const summary = await this.reconcile();
        const changed = summary.added.length + summary.updated.length + summary.removed.length;
        if (changed > 0 || summary.unchanged.length > 0) this.logger.info(summary, 'job schedules registered');
        return;
      } catch (error) {
        // why not the first failure: at start-up the connection may still be opening.
        if (attempt === 2) this.logger.warn({ err: error }, `could not register job schedules yet; retrying every ${RETRY_MS} ms`);
        await new Promise((resolve) => setTimeout(resolve, RETRY_MS).unref());
      }
    }
  }
}
