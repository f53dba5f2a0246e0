import type { Job } from 'bullmq';
import type { RedisClient } from '@app/redis';
import { queueKeys } from './queue.keys';

/**
 * Stops what is left of a fan-out job's children (cancel, or a failed chunk): the parent's cancel
 * marker makes a child picked up later fail at once, running children are aborted by whichever
 * worker holds them, and queued ones are removed. Removing the last pending child wakes the parent,
 * which then sees its marker and ends as cancelled.
 */
export async function stopChildren(job: Job, redis: RedisClient, prefix: string, markerTtlSeconds: number): Promise<void> {
  const keys = queueKeys(prefix);
  await redis.set(keys.cancelMarker(job.id!), '1', 'EX', markerTtlSeconds);
  const { unprocessed = [] } = await job.getDependencies({ unprocessed: { count: 1000 } });
  await Promise.all(unprocessed.map((key) => redis.publish(keys.cancelChannel, key.slice(key.lastIndexOf(':') + 1))));
  await job.removeUnprocessedChildren();
}
