import type { RedisClient } from '@app/redis';
import { deduplicationKey } from './queue.keys';

/**
 * How long after a job completes an identical submission still joins it (ms), at most: bounded by
 * the job's retention too, so nothing joins a job that is gone. why: the API looks its input up in
 * the cache, then adds the job, deduplicated by the input's content key. An identical job that
 * completes between the two has cached its result after the look missed it, and BullMQ drops a
 * deduplication key when its job ends, so that add would make a second job and run the work again.
 * Kept a while after the completion, the key makes the add join the completed job, whose result
 * the caller then gets. It only has to outlast the API's step from its look to its add (a round
 * trip); a stall longer than this runs the work once more, which costs a run and nothing else.
 */
export const JOINABLE_AFTER_COMPLETION_MS = 5000;

/**
 * Keeps deduplication id `key` of job `id` in `queue` for `ms` after the job completes: send it
 * before BullMQ's completion of the job, on BullMQ's connection. BullMQ's completion deletes a
 * deduplication key without an expiry and leaves one with an expiry to lapse
 * (test/bullmq-internals.e2e-spec.ts pins both). One SET, only if the key exists (XX): where it is
 * gone (a failover lost it) nothing is made; where it names another job of the same content key (a
 * failover lost it and that job took it since), it names this one, whose result for that same
 * input is cached by now, and that job runs on unchanged.
 */
export function keepJoinable(redis: RedisClient, prefix: string, queue: string, id: string, key: string, ms: number): Promise<unknown> {
  return redis.set(deduplicationKey(prefix, queue, key), id, 'PX', ms, 'XX');
}
