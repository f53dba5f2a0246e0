import type { Job } from 'bullmq';
import { formatFailure, JobFailureCode } from '@app/jobs';
import type { RedisClient } from '@app/redis';
import { flagCancelled } from './cancel-flag';
import { queueKeys } from './queue.keys';

/**
 * Stops what is left of a fan-out job's children (cancel, or a failed chunk): the flag on the
 * parent and on each child not yet done makes one picked up later fail as cancelled at once, running children
 * are aborted by whichever worker holds them, and queued ones are removed. Removing the last pending
 * child wakes the parent, which then sees its flag and ends as cancelled.
 */
export async function stopChildren(job: Job, redis: RedisClient, prefix: string): Promise<void> {
  const keys = queueKeys(prefix);
  const { unprocessed = [] } = await job.getDependencies({ unprocessed: { count: 1000 } });
  await flagCancelled(redis, [`${job.queueQualifiedName}:${job.id}`], formatFailure(JobFailureCode.JOB_CANCELLED, 'cancelled while its chunks ran'));
  await flagCancelled(redis, unprocessed, formatFailure(JobFailureCode.JOB_CANCELLED, 'its fan-out job was cancelled'));
  await Promise.all(unprocessed.map((key) => redis.publish(keys.cancelChannel, key.slice(key.lastIndexOf(':') + 1))));
  await job.removeUnprocessedChildren();
}
