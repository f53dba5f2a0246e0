import type { JobDefinition } from '@app/jobs';

/**
 * The BullMQ options every job of type `def` gets, whoever adds it (a submission, single or batch;
 * a fan-out's chunks; a schedule's ticks): priority, retries with exponential backoff, and how long
 * it stays readable once finished. Which failures use the retries: isRetried in @app/jobs.
 */
export function jobOptions(def: JobDefinition, retentionSeconds: number) {
  return {
    priority: def.priority,
    attempts: def.retry.attempts,
    backoff: { type: 'exponential', delay: def.retry.backoffMs },
    removeOnComplete: { age: retentionSeconds },
    removeOnFail: { age: retentionSeconds },
  };
}
