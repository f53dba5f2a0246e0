import { LuaScript, type RedisClient } from '@app/redis';
import { bullKey, queueKeys, watchersKey } from './queue.keys';

/**
 * The notice protocol: what a worker (or an API replica that ends a job itself) tells the API
 * replicas that wait on a job (`Prefer: wait`, an event stream, a joined submission, a webhook
 * delivery, a cancel's confirmation), and only them. Its type, encoding and scripts are here; its
 * channel and key names in queue.keys.ts (noticeChannel, watchersKey). Both apps use this module.
 *
 * A replica about to wait on a job adds its channel to the job's watchers (a set) in Redis; every
 * notice is one script that publishes to each channel in that set (SPUBLISH: sharded, in the
 * queue's slot). A job nobody watches costs that script's empty SMEMBERS, whatever the number of
 * API replicas.
 */

/** The fields of a BullMQ job a view is made of (the API's JobView is built from them). */
export interface JobRecord {
  id?: string;
  name: string;
  progress: unknown;
  returnvalue: unknown;
  failedReason?: string;
  attemptsMade: number;
  attemptsStarted?: number;
  timestamp: number;
  processedOn?: number;
  finishedOn?: number;
}

/**
 * - `progress`: the job's new progress, percent;
 * - `final`: it completed or failed for good; `record` is the job as it ended, so the waiter answers
 *   without reading it back (absent when the result is too large to send around);
 * - `settled`: something changed that the waiter should read (a job cancelled while queued, or
 *   failed by BullMQ itself after stalling).
 */
export type JobNotice =
  | { id: string; progress: number }
  | { id: string; final: 'completed' | 'failed'; record?: JobRecord }
  | { id: string; settled: true };

/** Results of at most this many characters of JSON travel in the notice; larger ones are read back. */
export const NOTICE_RESULT_MAX = 64 * 1024;

/** A notice as it travels: JSON; a final notice whose record is too large goes without it. */
export function encodeNotice(notice: JobNotice): string {
  const message = JSON.stringify(notice);
  // why: a large result would be copied to every watcher; they read it from the job instead.
  if ('record' in notice && message.length > NOTICE_RESULT_MAX) return JSON.stringify({ id: notice.id, final: notice.final } satisfies JobNotice);
  return message;
}

/** The notice in `message`, undefined when it is not one. A final notice's record gets the job's id. */
export function decodeNotice(message: string): JobNotice | undefined {
  let notice: JobNotice;
  try {
    notice = JSON.parse(message) as JobNotice;
  } catch {
    return undefined;
  }
  if (typeof notice?.id !== 'string') return undefined;
  if ('record' in notice && notice.record) notice.record.id = notice.id;
  return notice;
}

/** Lua: publishes `notice` to every channel in the set `watchers`; returns how many. Every script below starts with it. */
const PUBLISH = `local function publish(watchers, notice)
  local channels = redis.call('SMEMBERS', watchers)
  for _, channel in ipairs(channels) do redis.call('SPUBLISH', channel, notice) end
  return #channels
end
`;

/** KEYS: the job's watchers. ARGV: the notice, '1' when final (the watchers are deleted too). */
const NOTIFY = new LuaScript(`${PUBLISH}
local n = publish(KEYS[1], ARGV[1])
if ARGV[2] == '1' then redis.call('DEL', KEYS[1]) end
return n`, 1);

/**
 * KEYS: the job's hash, its queue's event stream and meta hash, its watchers. ARGV: job id, percent,
 * the notice. Lines 2-7 are BullMQ's updateProgress (scripts/updateProgress-3, with its
 * getOrSetMaxEvents), so BullMQ tools see the progress as if BullMQ had set it;
 * test/bullmq-internals.e2e-spec.ts pins that script and compares what both write.
 */
const PROGRESS = new LuaScript(`${PUBLISH}
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local maxEvents = redis.call('HGET', KEYS[3], 'opts.maxLenEvents')
if not maxEvents then maxEvents = 10000; redis.call('HSET', KEYS[3], 'opts.maxLenEvents', maxEvents) end
redis.call('HSET', KEYS[1], 'progress', ARGV[2])
redis.call('XADD', KEYS[2], 'MAXLEN', '~', maxEvents, '*', 'event', 'progress', 'jobId', ARGV[1], 'data', ARGV[2])
publish(KEYS[4], ARGV[3])
return 0`, 4);

/**
 * KEYS: a fan-out parent's chunk-progress hash, its job hash, event stream, meta hash and watchers
 * (one hash tag: one slot). ARGV: chunk index, its percent, chunk count, hash TTL seconds, parent id,
 * the parent's progress notice. Raises the parent's progress to the chunks' average, never lowers
 * it, records it as PROGRESS does, and tells the parent's watchers: the notice TypeScript encoded,
 * with the average as its progress. why one script: chunks run on several workers at once; two that
 * each read, averaged, then wrote could write an older average last, and the parent's progress went
 * backwards (test/parallel-sum.e2e-spec.ts saw 0, 1, 0, 2, 1…).
 */
const CHILD_PROGRESS = new LuaScript(`${PUBLISH}
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('EXPIRE', KEYS[1], ARGV[4])
local total = 0
for _, value in ipairs(redis.call('HVALS', KEYS[1])) do total = total + tonumber(value) end
local average = math.floor(total / tonumber(ARGV[3]))
if redis.call('EXISTS', KEYS[2]) == 0 or average <= (tonumber(redis.call('HGET', KEYS[2], 'progress')) or 0) then return -1 end
local maxEvents = redis.call('HGET', KEYS[4], 'opts.maxLenEvents')
if not maxEvents then maxEvents = 10000; redis.call('HSET', KEYS[4], 'opts.maxLenEvents', maxEvents) end
redis.call('HSET', KEYS[2], 'progress', average)
redis.call('XADD', KEYS[3], 'MAXLEN', '~', maxEvents, '*', 'event', 'progress', 'jobId', ARGV[5], 'data', average)
local notice = cjson.decode(ARGV[6])
notice.progress = average
publish(KEYS[5], cjson.encode(notice))
return average`, 5);

/**
 * KEYS: the job's watchers, its hash. ARGV: the final notice, the `finishedOn` its completion
 * records. Publishes (and forgets the watchers) only once the job's hash has that `finishedOn`:
 * sent right behind BullMQ's completion, it reports it without waiting for its reply, and a
 * completion that did not happen (a lock lost) reports nothing. Returns how many, or -1.
 */
const NOTIFY_COMPLETED = new LuaScript(`${PUBLISH}
if redis.call('HGET', KEYS[2], 'finishedOn') ~= ARGV[2] then return -1 end
local n = publish(KEYS[1], ARGV[1])
redis.call('DEL', KEYS[1])
return n`, 2);

/**
 * Sends `notice` to the watchers of its job in `queue`; a `final` one (the job ended) forgets them
 * too. Resolves with how many replicas it reached.
 */
export async function notify(redis: RedisClient, prefix: string, queue: string, notice: JobNotice, final: boolean): Promise<number> {
  return (await NOTIFY.run(redis, watchersKey(prefix, queue, notice.id), encodeNotice(notice), final ? '1' : '0')) as number;
}

/**
 * Sends the final notice of a completion BullMQ is about to record, at `record.finishedOn`: send it on
 * BullMQ's connection after the completion. Resolves with how many replicas it reached, or -1 when
 * the job had not completed so when it ran (then send it with `notify` once BullMQ says it did).
 */
export async function notifyCompleted(redis: RedisClient, prefix: string, queue: string, id: string, record: JobRecord & { finishedOn: number }): Promise<number> {
  const notice = encodeNotice({ id, final: 'completed', record });
  return (await NOTIFY_COMPLETED.run(redis, watchersKey(prefix, queue, id), bullKey(prefix, queue, id), notice, String(record.finishedOn))) as number;
}

/** Sets job `id`'s progress to `percent`, as BullMQ's updateProgress does, and tells its watchers, in one script. */
export function notifyProgress(redis: RedisClient, prefix: string, queue: string, id: string, percent: number): Promise<unknown> {
  const key = (structure: string) => bullKey(prefix, queue, structure);
  return PROGRESS.run(redis, key(id), key('events'), key('meta'), watchersKey(prefix, queue, id), id, String(percent), encodeNotice({ id, progress: percent }));
}

/**
 * Chunk `index` of the `of` chunks of fan-out job `parentId` (in `queue`) is at `percent`: the
 * parent follows the chunks' average (see CHILD_PROGRESS); the chunks' hash lives `ttlSeconds`.
 */
export function notifyChildProgress(
  redis: RedisClient,
  prefix: string,
  queue: string,
  { parentId, index, of, ttlSeconds }: { parentId: string; index: number; of: number; ttlSeconds: number },
  percent: number,
): Promise<unknown> {
  const key = (structure: string) => bullKey(prefix, queue, structure);
  return CHILD_PROGRESS.run(
    redis,
    queueKeys(prefix).fanOutProgress(queue, parentId),
    key(parentId),
    key('events'),
    key('meta'),
    watchersKey(prefix, queue, parentId),
    String(index),
    String(percent),
    String(of),
    String(ttlSeconds),
    parentId,
    encodeNotice({ id: parentId, progress: 0 }),
  );
}
