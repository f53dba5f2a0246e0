import { Controller, Get } from '@nestjs/common';
import { scheduledJobId } from '@app/queue';
import { JobQueues } from '../jobs/queue.providers';
import { ScheduleRegistrar } from './schedule-registrar';

export interface ScheduleView {
  /** The BullMQ job scheduler: `<type>:<name>`. */
  id: string;
  type: string;
  name: string;
  cron?: string;
  tz?: string;
  everyMs?: number;
  /** The input every tick runs with (defaults applied). */
  input: unknown;
  /** When the next tick is due, or null while it is not registered (Redis was away at start-up). */
  nextRunAt: string | null;
  /** The next tick's job id: readable and cancellable like any job (cancelling it skips that tick). */
  nextJobId: string | null;
}

/** GET /v1/schedules: every declared schedule, with its next run as BullMQ holds it. */
@Controller('v1/schedules')
export class SchedulesController {
  constructor(
    private readonly registrar: ScheduleRegistrar,
    private readonly queues: JobQueues,
  ) {}

  @Get()
  list(): Promise<ScheduleView[]> {
    return Promise.all(
      this.registrar.declared.map(async ({ id, def, schedule }) => {
        const scheduler = await this.queues.get(def.queue).getJobScheduler(id);
        const next = scheduler?.next ?? null;
        const { name, cron, tz, everyMs, input } = schedule;
        return {
          id,
          type: def.name,
          name,
          ...(cron === undefined ? {} : { cron }),
          ...(tz === undefined ? {} : { tz }),
          ...(everyMs === undefined ? {} : { everyMs }),
          input,
          nextRunAt: next === null ? null : new Date(next).toISOString(),
          nextJobId: next === null ? null : scheduledJobId(id, next),
        };
      }),
    );
  }
}
