import { LuaScript, type RedisClient } from '@app/redis';
import { queuePrefix } from './queue.keys';

/**
 * Start deadlines, as the API and the workers share them (docs/api.md#start-deadlines). A job whose
 * submission set one (`Start-Within`, or its type's `startWithinMs`) has `startBy` in its data and an
 * entry in its queue's deadline set: member its id, score the deadline in epoch ms. A submission
 * that joins it raises the score to its own deadline, or to +inf without one (the job stays wanted
 * for as long as its most patient owner waits). Every API replica pops the due entries and removes
 * the jobs still queued (JobExpiry); a worker that picks up a job past `startBy` asks the set before
 * running it (JobProcessor), so no run starts late whether or not an API got there first.
 */

/** The deadline set of `queue`, under its hash tag. */
export function startDeadlinesKey(prefix: string, queue: string): string {
  return `${queuePrefix(prefix, queue)}:start-deadlines`;
}

/**
 * KEYS: the deadline set. ARGV: now (epoch ms), how many. Removes the ids due by now, earliest
 * first, and returns the next deadline left (epoch ms; '' for none, 'inf' when only joined jobs
 * without one are left) followed by those ids.
 */
export const POP_DUE = new LuaScript(`
local ids = redis.call('ZRANGE', KEYS[1], '-inf', ARGV[1], 'BYSCORE', 'LIMIT', 0, tonumber(ARGV[2]))
if #ids > 0 then redis.call('ZREM', KEYS[1], unpack(ids)) end
local next = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
table.insert(ids, 1, next[2] or '')
return ids
`, 1);

/** The score a joining submission without a deadline gives the job: it no longer expires. */
export const NO_DEADLINE = '+inf';

/**
 * Raises job `id`'s deadline to `startBy` (epoch ms, or NO_DEADLINE) if it has one, as a submission
 * that joins it asks. why XX: a job without an entry has no deadline, and joining must not give it one.
 */
export function extendDeadline(redis: RedisClient, key: string, id: string, startBy: number | typeof NO_DEADLINE): Promise<unknown> {
  return redis.zadd(key, 'XX', 'GT', startBy, id);
}

/**
 * True when job `id`, picked up past the `startBy` in its data, must not run: its entry was popped
 * (an API replica is removing it) or its raised deadline has passed too.
 */
export async function pastDeadline(redis: RedisClient, key: string, id: string, now = Date.now()): Promise<boolean> {
  const score = await redis.zscore(key, id);
  if (score === null) return true;
  return score !== 'inf' && Number(score) <= now;
}
