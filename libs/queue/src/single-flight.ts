import { LuaScript, type RedisClient } from '@app/redis';
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

/** KEYS: the deduplication key. ARGV: the job id, ms. Gives the key that expiry if it still names the job. */
const KEEP_JOINABLE = new LuaScript(
  `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0`,
  1,
);

/**
 * Keeps deduplication id `key` of job `id` in `queue` for `ms` after the job completes: send it
 * before BullMQ's completion of the job, on BullMQ's connection. BullMQ's completion deletes a
 * deduplication key without an expiry and leaves one with an expiry to lapse
 * (test/bullmq-internals.e2e-spec.ts pins both). Right after a Redis restart, whose script cache is
 * empty, the script goes again as EVAL behind the completion and finds the key gone: that one job
 * is then single-flighted by the API's look alone.
 */
export function keepJoinable(redis: RedisClient, prefix: string, queue: string, id: string, key: string, ms: number): Promise<unknown> {
  return KEEP_JOINABLE.run(redis, deduplicationKey(prefix, queue, key), id, ms);
}
