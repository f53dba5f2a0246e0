import { Controller, Get } from '@nestjs/common';
import { ApiOperation, ApiResponse, ApiTags } from '../http/openapi.recorder';
import { scheduledJobId } from '@app/queue';
import { JobQueues } from '../queues/queue.providers';
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

/** ScheduleView as JSON Schema. why inline, not a component: deleting this folder leaves no unused one. */
const SCHEDULE_VIEW = {
  type: 'object',
  required: ['id', 'type', 'name', 'input', 'nextRunAt', 'nextJobId'],
  properties: {
    id: { type: 'string', description: 'The BullMQ job scheduler: `<type>:<name>`.' },
    type: { type: 'string' },
    name: { type: 'string' },
    cron: { type: 'string' },
    tz: { type: 'string' },
    everyMs: { type: 'integer', minimum: 1 },
    input: { description: 'The input every tick runs with (defaults applied).' },
    nextRunAt: { type: ['string', 'null'], format: 'date-time', description: 'When the next tick is due; null while it is not registered.' },
    nextJobId: { type: ['string', 'null'], description: 'The next tick’s job id: readable and cancellable like any job.' },
  },
};

/** GET /v1/schedules: every declared schedule, with its next run as BullMQ holds it. */
@ApiTags('schedules')
@Controller('v1/schedules')
export class SchedulesController {
  constructor(
    private readonly registrar: ScheduleRegistrar,
    private readonly queues: JobQueues,
  ) {}

  @Get()
  @ApiOperation({ summary: 'List the schedules', description: 'Every declared schedule, with its next run as BullMQ holds it.' })
  @ApiResponse({ status: 200, description: 'Every declared schedule.', content: { 'application/json': { schema: { type: 'array', items: SCHEDULE_VIEW } } } })
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
