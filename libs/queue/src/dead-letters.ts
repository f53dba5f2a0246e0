import { blobKeyOf } from '@app/blobs';
import { type JobFailureCode, parseFailure } from '@app/jobs';
import { LuaScript, type RedisClient } from '@app/redis';
import { BlobLeases } from './blob-leases';
import type { JobData } from './job-data';
import { deadLetterKey, deadLettersKey, jobTagsKey, ownersKey } from './queue.keys';

/**
 * Dead letters, as the workers keep them and the API lists and replays them (docs/operate.md#dead-letters).
 * A job that fails for good (its attempts used up, JOB_CRASHED past its retries, JOB_LOST, JOB_CHILD_FAILED,
 * a timeout …; not a cancel or an expiry, which nobody wants run again) is copied, when BullMQ records
 * the failure, into its queue's dead letters, under the queue's hash tag:
 *
 * - `deadLettersKey`: the index, member the job id, score when it failed (epoch ms);
 * - `deadLetterKey(id)`: a hash of its type, version, input, files, error, attempts, times, its owners
 *   and their tags (`tags:<scope>`), living DEAD_LETTER_RETENTION_SECONDS, whatever JOB_RETENTION_SECONDS says.
 *
 * A replay claims entries by moving them from the index to `deadLetterClaimsKey` with a deadline
 * (DEAD_LETTER_PAGE with claim, atomic), so two replays never take the same one; it submits each
 * under an id derived from the entry (replayJobId), then names the new job in the hash
 * (`replayedAs`, which stays until it expires) and removes the claim. A claim that ends otherwise is
 * settled (SETTLE): if the job of the derived id exists (or was kept as a dead letter itself), the
 * submission happened and only its record was lost (a Redis error, the API killed between the
 * two), so the record is written; otherwise the entry goes back to the index. The replay settles
 * what it gives up (SETTLE_CLAIMS), any API replica's sweep what lapsed (RETURN_LAPSED_CLAIMS). A
 * claimed dead letter is never lost, one with `replayedAs` is never taken again, and one replayed
 * again anyway (its claim swept back while its submission was still under way) adds the same job
 * id, which BullMQ does not add twice.
 * The index is trimmed of what expired on every write and read: it is never scanned whole.
 */

/**
 * How long a replay's claim holds (renewed before each submission): past it, the sweep settles the
 * entry (back to the dead letters, unless its job was added). why a minute: one submission (up to
 * 1,000 jobs) takes well under a second, and an entry a dead replica claimed is replayable again
 * soon after.
 */
export const CLAIM_MS = 60_000;

/** The failure codes a dead letter is kept for: every final failure but a cancel and an expiry. */
export const KEPT_CODES: ReadonlySet<JobFailureCode> = new Set<JobFailureCode>(['JOB_FAILED', 'JOB_CRASHED', 'JOB_OUT_OF_MEMORY', 'JOB_TIMEOUT', 'JOB_REJECTED', 'JOB_CHILD_FAILED', 'JOB_LOST']);

/** What a worker knows of a job BullMQ has just failed for good. */
export interface FailedJob {
  id?: string;
  name: string;
  queueName: string;
  data: JobData;
  attemptsMade: number;
  timestamp: number;
  finishedOn?: number;
  failedReason?: string;
}

/**
 * KEYS: the index, the entry, the job's owner set, its tags hash. ARGV: id, failed at (epoch ms),
 * retention (s), then the entry's field/value pairs. Copies the owners and their tags into the
 * entry, and trims from the index what has expired.
 */
const KEEP = new LuaScript(`
local fields = {}
for i = 4, #ARGV do fields[#fields + 1] = ARGV[i] end
local owners = redis.call('SMEMBERS', KEYS[3])
fields[#fields + 1] = 'owners'
fields[#fields + 1] = table.concat(owners, ',')
local tags = redis.call('HGETALL', KEYS[4])
for i = 1, #tags, 2 do
  fields[#fields + 1] = 'tags:' .. tags[i]
  fields[#fields + 1] = tags[i + 1]
end
redis.call('DEL', KEYS[2])
redis.call('HSET', KEYS[2], unpack(fields))
redis.call('EXPIRE', KEYS[2], tonumber(ARGV[3]))
redis.call('ZADD', KEYS[1], tonumber(ARGV[2]), ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. (tonumber(ARGV[2]) - tonumber(ARGV[3]) * 1000))
return 1
`, 4);

/**
 * Keeps `job`, which BullMQ has just failed for good, as a dead letter for `retentionSeconds`, if its
 * failure is one (KEPT_CODES) and it is somebody's (a fan-out chunk is its parent's: the parent is kept).
 * Resolves false when nothing was kept.
 */
export async function keepDeadLetter(redis: RedisClient, prefix: string, job: FailedJob, retentionSeconds: number): Promise<boolean> {
  if (retentionSeconds <= 0 || job.id === undefined || job.data.parent !== undefined) return false;
  const failure = parseFailure(job.failedReason);
  if (!KEPT_CODES.has(failure.code)) return false;
  const failedAt = job.finishedOn ?? Date.now();
  const { data } = job;
  const fields = [
    'type', job.name,
    'version', String(data.version),
    'input', data.inputJson,
    'code', failure.code,
    'message', failure.message.slice(0, 2000),
    'attempts', String(job.attemptsMade),
    'createdAt', String(job.timestamp),
    'failedAt', String(failedAt),
    ...(data.files ? ['files', JSON.stringify(data.files)] : []),
    ...(data.scope === undefined ? [] : ['scope', data.scope]),
    ...(data.requestId === undefined ? [] : ['requestId', data.requestId]),
  ];
  const queue = job.queueName;
  await KEEP.run(redis, deadLettersKey(prefix, queue), deadLetterKey(prefix, queue, job.id), ownersKey(prefix, queue, job.id), jobTagsKey(prefix, queue, job.id), job.id, failedAt, retentionSeconds, ...fields);
  // why: its input files' leases (libs/queue/src/blob-leases.ts) end with the job's retention; a
  // replay of the dead letter, up to retentionSeconds later, needs them still in the store.
  if (data.files) await new BlobLeases(redis, prefix).hold(Object.values(data.files).map((file) => blobKeyOf(file.sha256)), failedAt + retentionSeconds * 1000);
  return true;
}

/** A dead letter as the API reads it. */
export interface DeadLetter {
  id: string;
  queue: string;
  type: string;
  version: number;
  inputJson: string;
  files?: string;
  /** The scope a `share: 'caller'` job was submitted under (part of its content key). */
  scope?: string;
  code: JobFailureCode;
  message: string;
  attempts: number;
  createdAt: number;
  failedAt: number;
  requestId?: string;
  /** Its owners' scopes (with API keys; empty without). */
  owners: string[];
  /** The tags each owner gave it, by scope (as the listing index keeps them). */
  tags: Record<string, string>;
  /** The job its replay submitted, once replayed. */
  replayedAs?: string;
  replayedAt?: number;
}

/** A dead letter from its hash's field/value pairs (HGETALL), or undefined for an empty one. */
export function deadLetterOf(id: string, queue: string, pairs: readonly string[] | Record<string, string>): DeadLetter | undefined {
  const hash: Record<string, string> = Array.isArray(pairs) ? {} : { ...(pairs as Record<string, string>) };
  if (Array.isArray(pairs)) for (let i = 0; i + 1 < pairs.length; i += 2) hash[pairs[i]] = pairs[i + 1];
  if (hash.type === undefined) return undefined;
  const tags: Record<string, string> = {};
  for (const [field, value] of Object.entries(hash)) if (field.startsWith('tags:')) tags[field.slice('tags:'.length)] = value;
  return {
    id,
    queue,
    type: hash.type,
    version: Number(hash.version),
    inputJson: hash.input,
    ...(hash.files !== undefined && { files: hash.files }),
    ...(hash.scope !== undefined && { scope: hash.scope }),
    code: hash.code as JobFailureCode,
    message: hash.message ?? '',
    attempts: Number(hash.attempts),
    createdAt: Number(hash.createdAt),
    failedAt: Number(hash.failedAt),
    ...(hash.requestId !== undefined && { requestId: hash.requestId }),
    owners: hash.owners ? hash.owners.split(',') : [],
    tags,
    ...(hash.replayedAs !== undefined && { replayedAs: hash.replayedAs, replayedAt: Number(hash.replayedAt) }),
  };
}

/** One queue's page of dead letters (see DEAD_LETTER_PAGE). */
export interface DeadLetterPage {
  letters: DeadLetter[];
  /** Where the walk stopped (score, id): entries after it were not looked at; undefined: it reached the end. */
  stoppedAt?: { score: number; id: string };
}

/**
 * KEYS: the index, the claims. ARGV: the highest score (a cursor's, or `until`), the id at that
 * score to go on after ('' for none), the lowest score (`since`), how many, the type ('' any), the
 * code ('' any), the entry key prefix (deadLetterKey(prefix, queue, '')), '1' to claim, how many
 * entries to look at at most, now (epoch ms), the retention (s), when a claim lapses (epoch ms).
 * Walks the index newest first (ties: the larger id first), strictly after the cursor, and returns
 * the stop position (score and id; '' for the end) followed by `{id, score, fields}` of each
 * matching entry; with claim, each moves from the index to the claims in the same step (a replay's:
 * nobody else can take it). Entries past retention, and any already replayed, leave the index.
 */
export const DEAD_LETTER_PAGE = new LuaScript(`
local max, last, min, count = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local maxn = tonumber(max)
local budget = tonumber(ARGV[9])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. (tonumber(ARGV[10]) - tonumber(ARGV[11]) * 1000))
local out = { '', '' }
local found, seen, offset = 0, 0, 0
while true do
  local batch = redis.call('ZRANGE', KEYS[1], max, min, 'BYSCORE', 'REV', 'LIMIT', offset, 100, 'WITHSCORES')
  local removed = 0
  for i = 1, #batch, 2 do
    local id, score = batch[i], batch[i + 1]
    if last == '' or tonumber(score) < maxn or id < last then
      seen = seen + 1
      local key = ARGV[7] .. id
      local head = redis.call('HMGET', key, 'type', 'code', 'replayedAs')
      if not head[1] or head[3] then
        redis.call('ZREM', KEYS[1], id)
        removed = removed + 1
      elseif (ARGV[5] == '' or head[1] == ARGV[5]) and (ARGV[6] == '' or head[2] == ARGV[6]) then
        if ARGV[8] == '1' then
          redis.call('ZREM', KEYS[1], id)
          redis.call('ZADD', KEYS[2], tonumber(ARGV[12]), id)
          removed = removed + 1
        end
        out[#out + 1] = { id, score, redis.call('HGETALL', key) }
        found = found + 1
      end
      if found >= count or seen >= budget then
        out[1] = score
        out[2] = id
        return out
      end
    end
  end
  if #batch < 200 then return out end
  offset = offset + 100 - removed
end
`, 2);

/**
 * Lua shared by the scripts that settle claims (KEYS[1]: the index). `settle(id, entries, jobs, now)`
 * settles the claimed entry `id` of a replay that recorded no job for it: if the job of its derived
 * id (replayJobId, derived here alike: keep the two in step) exists, as a job (`jobs`, the job key
 * prefix) or as a dead letter of its own once it failed again (`entries`, the entry key prefix),
 * the replay added it and lost only its record, which is written now (`replayedAs`, `replayedAt`);
 * otherwise the entry goes back in the index, by when it failed. Returns the job recorded, '' for
 * an entry put back, false for one that expired or already names its job.
 */
const SETTLE = `
local function replayId(id, failedAt)
  local h = redis.sha1hex('replay\\n' .. id .. '\\n' .. failedAt)
  return string.sub(h, 1, 8) .. '-' .. string.sub(h, 9, 12) .. '-5' .. string.sub(h, 14, 16) .. '-8' .. string.sub(h, 18, 20) .. '-' .. string.sub(h, 21, 32)
end
local function settle(id, entries, jobs, now)
  local head = redis.call('HMGET', entries .. id, 'failedAt', 'replayedAs')
  if not head[1] or head[2] then return false end
  local replay = replayId(id, head[1])
  if redis.call('EXISTS', jobs .. replay, entries .. replay) > 0 then
    redis.call('HSET', entries .. id, 'replayedAs', replay, 'replayedAt', now)
    return replay
  end
  redis.call('ZADD', KEYS[1], tonumber(head[1]), id)
  return ''
end
`;

/**
 * KEYS: the index, the claims. ARGV: now (epoch ms), the entry key prefix, how many at most, the job
 * key prefix (bullKey(prefix, queue, '')). Settles the claims that have lapsed (see SETTLE): their
 * replay did not finish. Returns how many went back, then the ids recorded and their jobs, in pairs.
 */
export const RETURN_LAPSED_CLAIMS = new LuaScript(`${SETTLE}
local ids = redis.call('ZRANGE', KEYS[2], '-inf', ARGV[1], 'BYSCORE', 'LIMIT', 0, tonumber(ARGV[3]))
local back, recorded = 0, {}
for _, id in ipairs(ids) do
  local settled = settle(id, ARGV[2], ARGV[4], ARGV[1])
  if settled == '' then
    back = back + 1
  elseif settled then
    recorded[#recorded + 1] = id
    recorded[#recorded + 1] = settled
  end
end
-- why the claims go last: see SETTLE_CLAIMS.
if #ids > 0 then redis.call('ZREM', KEYS[2], unpack(ids)) end
return { back, recorded }
`, 2);

/**
 * KEYS: the index, the claims. ARGV: now (epoch ms), the entry key prefix, the job key prefix, then
 * ids. Settles the claims of `ids` a replay gives up (see SETTLE), those a sweep has not settled
 * already, and returns for each id the job its entry names now ('' for none: a dead letter again).
 */
export const SETTLE_CLAIMS = new LuaScript(`${SETTLE}
local out = {}
for i = 4, #ARGV do
  local id = ARGV[i]
  -- why the claim goes last: a script that fails half-way keeps what it wrote, and an entry must
  -- never be left neither claimed nor in the index nor recorded.
  if redis.call('ZSCORE', KEYS[2], id) then
    settle(id, ARGV[2], ARGV[3], ARGV[1])
    redis.call('ZREM', KEYS[2], id)
  end
  out[#out + 1] = redis.call('HGET', ARGV[2] .. id, 'replayedAs') or ''
end
return out
`, 2);
