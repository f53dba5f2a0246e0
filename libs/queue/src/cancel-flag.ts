import { formatFailure, JobFailureCode } from '@app/jobs';
import type { RedisClient } from '@app/redis';

/**
 * Gives each job of KEYS that still exists BullMQ's deferred failure (`defa`, ARGV[1]): a worker that
 * picks the job up fails it with that reason at once, without running it (BullMQ's processJob checks
 * it first; test/bullmq-internals.e2e-spec.ts pins that). why this and not a marker key: a marker
 * had to be read on every job's pickup, for a cancel that almost never comes; this is read with the
 * job. The keys of one queue share its hash tag: one slot, one script.
 */
const FLAG_CANCELLED = `for _, key in ipairs(KEYS) do
  if redis.call('EXISTS', key) == 1 then redis.call('HSET', key, 'defa', ARGV[1]) end
end`;

/** What a job cancelled before a worker ran it fails with. */
export const CANCELLED_BEFORE_START = formatFailure(JobFailureCode.JOB_CANCELLED, 'cancelled before it started');

/** Flags the jobs of `jobKeys` (their hashes' keys, all of one queue) as cancelled: their next pickup fails them. */
export async function flagCancelled(redis: RedisClient, jobKeys: readonly string[], reason = CANCELLED_BEFORE_START): Promise<void> {
  if (jobKeys.length > 0) await redis.eval(FLAG_CANCELLED, jobKeys.length, ...jobKeys, reason);
}
