import { LuaScript, type RedisClient } from '@app/redis';
import { jobTagsKey, listingEndsKey, listingKey, ownersKey } from './queue.keys';

/**
 * The listing index (GET /v1/jobs, GET /admin/jobs), as the API and the workers share it. For each
 * queue, under its hash tag:
 *
 * - `listingKey(scope)`: the caller's jobs (member the id, score when it submitted, epoch ms), and
 *   `listingKey(scope, tag)` those it tagged `tag`; `listingKey()` every caller's (with API keys);
 * - `jobTagsKey(id)`: the tags each caller gave the job (only for tagged jobs);
 * - `listingEndsKey`: when each listed job stops being readable (epoch ms).
 *
 * The API writes the entries with the job, in the same write (SubmitPipeline, through JobOwners); a
 * job's end sets its time in the ends set (a worker when it finishes it, the API when it cancels or
 * expires it while queued), and every API replica sweeps the due ends once a second (JobListing),
 * removing the job from every index that holds it: the index expires with the jobs, and is never
 * built by a scan. why the owner set as the list of callers to remove: it is already kept per job;
 * it outlives the end by SWEEP_GRACE_SECONDS so the sweep still finds it.
 */

/** How much longer than its job an owner set lives, so the sweep that forgets the job still finds its callers. */
export const SWEEP_GRACE_SECONDS = 60;

/**
 * Sets when job `id` of `queue` stops being readable (`until`, epoch ms): the listing forgets it then.
 * why plain ZADD (not GT): an end moves it to its real lifetime, shorter than the in-flight one the submission set.
 */
export function listUntil(redis: RedisClient, prefix: string, queue: string, id: string, until: number): Promise<unknown> {
  return redis.zadd(listingEndsKey(prefix, queue), until, id);
}

/**
 * KEYS: the ends set. ARGV: now (epoch ms), how many, the owner-set key prefix, the listing key
 * prefix (listingKey(prefix, queue, '')), the all-callers key ('' without API keys), the one scope
 * without API keys (owners are not recorded then), the tags key prefix. Forgets the jobs whose end
 * is due, earliest first, in every index that lists them; returns how many. Mirrors listingKey: a
 * tag's index is `<listing prefix><scope>:tag:<tag>`.
 */
export const SWEEP_ENDED = new LuaScript(`
local ids = redis.call('ZRANGE', KEYS[1], '-inf', ARGV[1], 'BYSCORE', 'LIMIT', 0, tonumber(ARGV[2]))
for _, id in ipairs(ids) do
  local scopes
  if ARGV[5] ~= '' then
    scopes = redis.call('SMEMBERS', ARGV[3] .. id)
    redis.call('ZREM', ARGV[5], id)
  else
    scopes = { ARGV[6] }
  end
  local tagsKey = ARGV[7] .. id
  for _, scope in ipairs(scopes) do
    redis.call('ZREM', ARGV[4] .. scope, id)
    local tags = redis.call('HGET', tagsKey, scope)
    if tags then
      for tag in string.gmatch(tags, '[^,]+') do redis.call('ZREM', ARGV[4] .. scope .. ':tag:' .. tag, id) end
    end
  end
  redis.call('DEL', tagsKey)
end
if #ids > 0 then redis.call('ZREM', KEYS[1], unpack(ids)) end
return #ids
`, 1);

/** The arguments of SWEEP_ENDED after now and the count, for `queue`. */
export function sweepArgs(prefix: string, queue: string, withOwners: boolean, anonymousScope: string): string[] {
  return [ownersKey(prefix, queue, ''), listingKey(prefix, queue, ''), withOwners ? listingKey(prefix, queue) : '', anonymousScope, jobTagsKey(prefix, queue, '')];
}

/**
 * KEYS: one index. ARGV: the highest score (a cursor's, or `until`), the id at that score to go on
 * after ('' for none: every entry at that score counts), the lowest score (`since`), how many.
 * Returns up to that many `[id, score, …]`, newest first (ties: the larger id first), strictly after
 * the cursor. why a script: entries added in the same millisecond (a batch) share a score, and only
 * a cursor of score and id passes over them exactly, whatever is added or removed meanwhile.
 */
export const PAGE = new LuaScript(`
local max, last, count = ARGV[1], ARGV[2], tonumber(ARGV[4])
local maxn = tonumber(max)
local out = {}
local offset = 0
while true do
  local batch = redis.call('ZRANGE', KEYS[1], max, ARGV[3], 'BYSCORE', 'REV', 'LIMIT', offset, count, 'WITHSCORES')
  for i = 1, #batch, 2 do
    if last == '' or tonumber(batch[i + 1]) < maxn or batch[i] < last then
      out[#out + 1] = batch[i]
      out[#out + 1] = batch[i + 1]
      if #out >= 2 * count then return out end
    end
  end
  if #batch < 2 * count then return out end
  offset = offset + count
end
`, 1);
