import { createHash } from 'node:crypto';
import { getNextMillis, type JobSchedulerTemplateOptions, type RepeatOptions } from 'bullmq';
import { canonicalJson, contentKey, type JobDefinition, type JobRegistry, type JobSchedule } from '@app/jobs';
import { jobOptions } from './job-options';
import type { JobData } from './job-data';
import { schedulerId } from './queue.keys';

/** What BullMQ is told about one declared schedule. */
export interface ScheduledJob {
  /** The BullMQ job scheduler's id: `<type>:<name>`. */
  readonly id: string;
  readonly def: JobDefinition;
  readonly schedule: JobSchedule;
  readonly repeat: Omit<RepeatOptions, 'key'>;
  /** The data of every tick's job: the same JobData a submission of that input gets. */
  readonly data: JobData;
  readonly opts: JobSchedulerTemplateOptions;
}

function repeatOf(schedule: JobSchedule): Omit<RepeatOptions, 'key'> {
  return schedule.cron !== undefined ? { pattern: schedule.cron, ...(schedule.tz ? { tz: schedule.tz } : {}) } : { every: schedule.everyMs };
}

/**
 * The scheduler of `schedule` of `def`. Its jobs carry the same data and options as a submission of
 * that input (without single-flight deduplication: each tick is a job of its own), so workers run
 * them like any other job; `schedule.spec` fingerprints the whole declaration.
 */
export function scheduledJob(def: JobDefinition, schedule: JobSchedule, retentionSeconds: number): ScheduledJob {
  const id = schedulerId(def.name, schedule.name);
  const repeat = repeatOf(schedule);
  const inputJson = canonicalJson(schedule.input);
  const opts = jobOptions(def, retentionSeconds);
  const spec = createHash('sha256')
    .update(canonicalJson({ repeat, inputJson, version: def.version, opts }))
    .digest('hex')
    .slice(0, 16);
  const data: JobData = { inputJson, version: def.version, key: contentKey(def, inputJson), schedule: { id, spec } };
  return { id, def, schedule, repeat, data, opts };
}

/** The next tick of `schedule` after `now` by BullMQ's own rules (its cron parser); throws on a bad cron. */
export function nextRunOf(schedule: JobSchedule, now = Date.now()): number | undefined {
  return getNextMillis(now, repeatOf(schedule) as RepeatOptions);
}

/**
 * Refuses to start with a cron expression BullMQ cannot parse, or one that never fires, naming the
 * type and schedule. why at start-up and not in defineJob: the parser (cron-parser, luxon) would load
 * into every pool thread, which imports the job declarations too.
 */
export function checkSchedules(registry: JobRegistry, now = Date.now()): void {
  const problems: string[] = [];
  for (const def of registry.list()) {
    for (const schedule of def.schedules) {
      if (schedule.cron === undefined) continue;
      const where = `Job type "${def.name}": schedule "${schedule.name}"`;
      try {
        if (!Number.isFinite(nextRunOf(schedule, now))) problems.push(`${where}: cron expression "${schedule.cron}" never fires`);
      } catch (error) {
        const tz = schedule.tz ? ` in time zone "${schedule.tz}"` : '';
        problems.push(`${where}: invalid cron expression "${schedule.cron}"${tz} (${error instanceof Error ? error.message : String(error)})`);
      }
    }
  }
  if (problems.length > 0) throw new Error(problems.join('\n'));
}
