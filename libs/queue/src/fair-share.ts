import { LuaScript, type RedisClient } from '@app/redis';
import { bullKey, fairKey } from './queue.keys';

/**
 * Fair share between callers, on open-source BullMQ: the one protocol the API (which parks jobs) and
 * the worker (which releases them as slots free) share, with its keys and its one script.
 *
 * With API keys, a new job is added to BullMQ as a delayed job due in a year (PARK_DELAY_MS): it is
 * a whole BullMQ job (its id, data, deduplication, events, cancel and start deadline work as for any
 * queued job), but no worker takes it. Its id also goes into its caller's waiting set (a sorted set
 * ordered by the job's priority, then by arrival, so priorities keep their meaning within a caller),
 * and the caller into the queue's ring of callers that have jobs waiting and room to run one. When
 * the ring is empty, the caller has room and BullMQ holds no job waiting, the park releases the job
 * at once instead (the single-caller fast path: nobody's turn can come first).
 *
 * Releasing moves the head job of the ring's next caller from `delayed` into BullMQ's wait list (or
 * prioritized set) exactly as BullMQ's promote script does, and into the caller's running set, but
 * only while BullMQ holds fewer jobs waiting than the slots about to take one: RELEASE_AHEAD for a
 * park, and for a worker one per slot of its own whose job is ending or that asks for one. A job is
 * released when a slot frees (a worker's job ends, before BullMQ records it, so the fetch BullMQ
 * chains onto the completion finds it; or a worker asks), so every caller with jobs waiting gets the
 * next slot in turn, and a new caller's job waits behind at most one released job per slot. A caller
 * at its limit (CALLER_CONCURRENCY) leaves the ring until one of its jobs ends.
 *
 * "Running" is released and not yet finished (waiting in BullMQ, active, or in a retry's backoff),
 * read from BullMQ's own record: a released job leaves the running set once its hash is gone or has
 * `finishedOn`. For a caller without a limit, whose count decides nothing, the worker takes the job
 * out when its run ends (the same call that releases ahead), so a retry's backoff is not counted.
 * The worker settles each job of a limited caller it ran once BullMQ recorded its end; `heal`, run
 * by every worker every HEAL_INTERVAL_MS, settles what nobody did (a worker killed between BullMQ's
 * completion and its settle, a job BullMQ failed as stalled too often, a released job removed while
 * waiting), so no caller's count stays up after a fault. A job a stalled worker held stays released
 * (BullMQ puts it back in wait) and so counted, until it ends. \`heal\` also gives back to its
 * caller's share a job parked in BullMQ whose share a failover lost (see the script).
 *
 * Cost per job: one script at submission (in the add's own write) and one when its run ends (in
 * BullMQ's completion's write, not awaited; a second after the completion for a caller with a
 * limit), each touching O(1) keys: the ring is popped and pushed, never scanned. `heal` reads every
 * known caller (bounded by API_KEYS) and their running jobs (bounded by the jobs in flight), once
 * per interval per worker, not per job.
 *
 * test/bullmq-internals.e2e-spec.ts pins what this copies from BullMQ (the promote script's steps,
 * the delayed and finishedOn fields) and test/tenancy.e2e-spec.ts the behaviour.
 */

/** How far in the future a parked job is due: never, in practice (a release promotes it long before). */
export const PARK_DELAY_MS = 365 * 24 * 3600 * 1000;
/** Jobs BullMQ may hold waiting before a park releases the next one: the fewer, the fairer (a worker asks for one per slot about to take one). */
export const RELEASE_AHEAD = 1;
/** How often each worker settles what no one settled (see `heal`). */
export const HEAL_INTERVAL_MS = 2000;

/**
 * The script. KEYS: the ring, which routes the call to the queue's hash slot. ARGV: fair-share key
 * base, BullMQ key base, operation, then the operation's arguments. Every other key (ring members,
 * callers' limits, all parked jobs, sequence, per-caller sets; BullMQ's delayed, wait, meta,
 * prioritized, active, priority counter, events, marker and job hashes) is its base and its name,
 * in the same slot (the queue's hash tag). why not declared: the names would travel in every call,
 * two a job, and cost the apps and Redis more to write and parse than the commands they serve.
 * Lines marked "promote" are BullMQ 6.7's promote-9 (its includes expanded), which the internals
 * test checks.
 */
const FAIR_SHARE = new LuaScript(
  `local rcall = redis.call
local fairBase, bullBase, op = ARGV[1], ARGV[2], ARGV[3]
local ring, inRing, limits, parked, seq = KEYS[1], fairBase .. 'in-ring', fairBase .. 'limits', fairBase .. 'parked', fairBase .. 'seq'
local delayedKey, waitKey, metaKey, prioritizedKey = bullBase .. 'delayed', bullBase .. 'wait', bullBase .. 'meta', bullBase .. 'prioritized'
local activeKey, pcKey, eventsKey, markerKey = bullBase .. 'active', bullBase .. 'pc', bullBase .. 'events', bullBase .. 'marker'
local function waitingOf(c) return fairBase .. 'waiting:' .. c end
local function runningOf(c) return fairBase .. 'running:' .. c end
-- A caller's concurrency limit (0: none), read once per call.
local known = {}
local function limitOf(c)
  if not known[c] then known[c] = tonumber(rcall('HGET', limits, c)) or 0 end
  return known[c]
end
local function below(c)
  local limit = limitOf(c)
  return limit == 0 or rcall('SCARD', runningOf(c)) < limit
end
-- Jobs BullMQ holds waiting (its wait list and prioritized set).
local function held() return rcall('LLEN', waitKey) + rcall('ZCARD', prioritizedKey) end
-- Into the ring, once: a caller with jobs waiting and room to run one (\`out\`: known not in it).
local function offer(c, out)
  if (out or rcall('SISMEMBER', inRing, c) == 0) and rcall('ZCARD', waitingOf(c)) > 0 and below(c) then
    rcall('RPUSH', ring, c)
    rcall('SADD', inRing, c)
  end
end
-- Out of the running set once BullMQ has finished the job or no longer has it.
local function settle(c, id)
  local jobKey = bullBase .. id
  if rcall('EXISTS', jobKey) == 0 or rcall('HEXISTS', jobKey, 'finishedOn') == 1 then rcall('SREM', runningOf(c), id) end
end
local function promote(id)
  local jobKey = bullBase .. id
  local priority = tonumber(rcall('HGET', jobKey, 'priority')) or 0 -- promote
  local marked = true
  local attributes = rcall('HMGET', metaKey, 'paused', 'concurrency') -- promote: isQueuePausedOrMaxed
  if attributes[1] then marked = false elseif attributes[2] then marked = rcall('LLEN', activeKey) < tonumber(attributes[2]) end
  if priority == 0 then
    rcall('LPUSH', waitKey, id) -- promote: addJobInTargetList
  else
    local counter = rcall('INCR', pcKey) -- promote: getPriorityScore
    rcall('ZADD', prioritizedKey, priority * 0x100000000 + counter % 0x100000000, id)
  end
  if marked then rcall('ZADD', markerKey, 0, '0') end -- promote: addBaseMarkerIfNeeded
  rcall('XADD', eventsKey, '*', 'event', 'waiting', 'jobId', id, 'prev', 'delayed') -- promote
  rcall('HSET', jobKey, 'delay', 0) -- promote
end
-- Releases the next callers' head jobs while BullMQ holds fewer than \`ahead\` waiting (\`waiting\`
-- when the caller has just read it). why counted here after the first read: within the script only
-- its own releases add to BullMQ's waiting jobs.
local function fill(ahead, waiting)
  local released, tries = 0, 0
  waiting = waiting or held()
  while tries < 32 and waiting < ahead do
    local c = rcall('LPOP', ring)
    if not c then break end
    rcall('SREM', inRing, c)
    tries = tries + 1
    local head = rcall('ZPOPMIN', waitingOf(c))
    local id = head[1]
    if id then
      rcall('ZREM', parked, id)
      -- why: a parked job may have been removed (cancelled, expired) or promoted by hand meanwhile.
      if rcall('ZREM', delayedKey, id) == 1 then
        promote(id)
        rcall('SADD', runningOf(c), id)
        released = released + 1
        waiting = waiting + 1
      end
    end
    offer(c, true)
  end
  return released
end
if op == 'park' then
  local c, limit = ARGV[4], ARGV[5]
  -- why read first: the limit is nearly always the one stored, and a read is no write to replicate.
  if rcall('HGET', limits, c) ~= limit then rcall('HSET', limits, c, limit) end
  known[c] = tonumber(limit) or 0
  local waiting = waitingOf(c)
  -- why the submitter's clock, not TIME: half PARK_DELAY_MS of margin dwarfs any skew.
  local floor = (tonumber(ARGV[6]) + ${PARK_DELAY_MS / 2}) * 0x1000
  -- why BullMQ's count first: under load it holds a job waiting, which settles the fast path below
  -- without reading the ring, and the fill after the loop reads it anyway.
  local bull = held()
  local seen, direct = 0, bull < ${RELEASE_AHEAD} and rcall('LLEN', ring) == 0
  for i = 7, #ARGV, 2 do
    local id = ARGV[i]
    local due = tonumber(rcall('ZSCORE', delayedKey, id))
    -- why the checks: a submission that joined an identical job planned an id no job has (nor will),
    -- and a job under a taken-over id may be released already (or in a retry's backoff, due soon).
    if due and due >= floor then
      seen = seen + 1
      -- The single-caller fast path: nobody's turn is waiting (the ring is empty), the caller has room
      -- and BullMQ holds no job waiting: released at once, with none of the share's bookkeeping. One
      -- parked job in this call parks the rest after it (the caller's order).
      direct = direct and bull < ${RELEASE_AHEAD} and below(c)
      if direct then
        rcall('ZREM', delayedKey, id)
        promote(id)
        rcall('SADD', runningOf(c), id)
        bull = bull + 1
      else
        local n = rcall('INCR', seq)
        if rcall('ZADD', waiting, 'NX', tonumber(ARGV[i + 1]) * 0x100000000 + n % 0x100000000, id) == 1 then rcall('ZADD', parked, n, id) end
      end
    elseif due or rcall('EXISTS', bullBase .. id) == 1 then
      seen = seen + 1
    end
  end
  offer(c)
  return {seen, fill(${RELEASE_AHEAD}, bull)}
elseif op == 'settle' then
  local c = ARGV[5]
  for i = 6, #ARGV do settle(c, ARGV[i]) end
  offer(c)
  return fill(tonumber(ARGV[4]))
elseif op == 'end' then
  -- A job's run ended, its completion not yet recorded: release ahead, so that the fetch BullMQ
  -- chains onto the completion finds a job. A caller without a limit has its job settled now: its
  -- running count decides nothing, and this saves a settle after the completion. why not a caller
  -- with a limit: its next job must not start before BullMQ has recorded this one's end.
  local c, id = ARGV[5], ARGV[6]
  local unlimited = limitOf(c) == 0
  if unlimited then rcall('SREM', runningOf(c), id) end
  fill(tonumber(ARGV[4]))
  return unlimited and 1 or 0
elseif op == 'forget' then
  local forgotten = 0
  for i = 4, #ARGV do
    local data = rcall('HGET', bullBase .. ARGV[i], 'data')
    local c = data and cjson.decode(data).caller
    if type(c) == 'string' and rcall('ZREM', waitingOf(c), ARGV[i]) == 1 then
      rcall('ZREM', parked, ARGV[i])
      forgotten = forgotten + 1
    end
  end
  return forgotten
elseif op == 'heal' then
  -- A job parked in BullMQ whose share was lost (a failover to a replica that had the add and not
  -- the park, which follows it in the same round trip) goes into its caller's share from its data.
  -- why only when counted more: parked jobs are never fewer in BullMQ's delayed set than in
  -- \`parked\` otherwise, so the usual heal reads two counts, not the jobs.
  local t = rcall('TIME')
  local floor = (tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + ${PARK_DELAY_MS / 2}) * 0x1000
  if rcall('ZCOUNT', delayedKey, floor, '+inf') > rcall('ZCARD', parked) then
    for _, id in ipairs(rcall('ZRANGEBYSCORE', delayedKey, floor, '+inf')) do
      if not rcall('ZSCORE', parked, id) then
        local data = rcall('HGET', bullBase .. id, 'data')
        local c = data and cjson.decode(data).caller
        if type(c) == 'string' then
          local n = rcall('INCR', seq)
          local priority = tonumber(rcall('HGET', bullBase .. id, 'priority')) or 0
          rcall('ZADD', waitingOf(c), 'NX', priority * 0x100000000 + n % 0x100000000, id)
          rcall('ZADD', parked, n, id)
          offer(c)
        end
      end
    end
  end
  local callers = rcall('HKEYS', limits)
  for _, c in ipairs(callers) do
    for _, id in ipairs(rcall('SMEMBERS', runningOf(c))) do settle(c, id) end
    offer(c)
  end
  return {#callers, fill(${RELEASE_AHEAD})}
elseif op == 'fill' then
  return fill(tonumber(ARGV[4]))
elseif op == 'counts' then
  local out = {}
  for _, c in ipairs(rcall('HKEYS', limits)) do
    table.insert(out, c)
    table.insert(out, rcall('ZCARD', waitingOf(c)))
    table.insert(out, rcall('SCARD', runningOf(c)))
    table.insert(out, rcall('HGET', limits, c))
  end
  return out
end
return redis.error_reply('fair-share: unknown operation ' .. tostring(op))`,
  1,
);

/** The keys and leading arguments of every call of the script for `queue`. */
function head(prefix: string, queue: string, op: string): string[] {
  return [...keysOf(prefix, queue), op];
}

/** The keys and key bases of `queue`, built once per queue: the script is called once or twice per job. */
const keysByQueue = new Map<string, readonly string[]>();
function keysOf(prefix: string, queue: string): readonly string[] {
  const at = `${prefix}\n${queue}`;
  let keys = keysByQueue.get(at);
  if (!keys) {
    keys = [fairKey(prefix, queue, 'ring'), fairKey(prefix, queue, ''), bullKey(prefix, queue, '')];
    keysByQueue.set(at, keys);
  }
  return keys;
}

/** One parked job: its id and its BullMQ priority (0: none). */
export interface ParkedJob {
  id: string;
  priority: number;
}

/**
 * Parks `jobs` (just added to `queue` as delayed by PARK_DELAY_MS) as the caller's, with its
 * concurrency limit (0: none), and releases what may run now. Ids not parked in `delayed` (a planned
 * id that joined another job, a job already released) are skipped. Send it on the add's connection,
 * after the add. Resolves with how many of `jobs` BullMQ had when it ran: fewer than the add created
 * means it ran before the add (nothing lost: send it again).
 */
export async function park(redis: RedisClient, prefix: string, queue: string, caller: string, limit: number, jobs: readonly ParkedJob[]): Promise<number> {
  if (jobs.length === 0) return 0;
  const [seen] = (await FAIR_SHARE.run(redis, ...head(prefix, queue, 'park'), caller, String(limit), String(Date.now()), ...jobs.flatMap((job) => [job.id, String(job.priority)]))) as [number, number];
  return seen;
}

/**
 * Takes the caller's jobs of `ids` that BullMQ has finished (or no longer has) out of its running set,
 * and releases what may run now, until BullMQ holds `ahead` jobs waiting.
 */
export function settle(redis: RedisClient, prefix: string, queue: string, caller: string, ids: readonly string[], ahead = RELEASE_AHEAD): Promise<unknown> {
  return FAIR_SHARE.run(redis, ...head(prefix, queue, 'settle'), String(ahead), caller, ...ids);
}

/**
 * The caller's job `id` ended its run and BullMQ is about to record it: releases until BullMQ holds
 * `ahead` jobs waiting (so the fetch chained onto the completion finds one), and settles the job now
 * if its caller has no concurrency limit. Resolves with true if it did (no settle needed after the
 * completion). Send it on BullMQ's connection, before the completion.
 */
export async function ending(redis: RedisClient, prefix: string, queue: string, caller: string, id: string, ahead: number): Promise<boolean> {
  return (await FAIR_SHARE.run(redis, ...head(prefix, queue, 'end'), String(ahead), caller, id)) === 1;
}

/**
 * Takes the parked jobs of `ids` out of their callers' shares (the caller read from each job's data),
 * so that they can be removed from BullMQ (cancelled, expired) without being released meanwhile.
 * why before the removal, not after: the job's data says whose it is. A job already released is not
 * parked, and is settled once BullMQ no longer has it.
 */
export function forgetParked(redis: RedisClient, prefix: string, queue: string, ids: readonly string[]): Promise<unknown> {
  return FAIR_SHARE.run(redis, ...head(prefix, queue, 'forget'), ...ids);
}

/** Releases what may run now, until BullMQ holds `ahead` jobs waiting in `queue`; resolves with the number released. */
export async function release(redis: RedisClient, prefix: string, queue: string, ahead = RELEASE_AHEAD): Promise<number> {
  return (await FAIR_SHARE.run(redis, ...head(prefix, queue, 'fill'), String(ahead))) as number;
}

/**
 * Settles every caller's running jobs that BullMQ has finished, puts back in the ring whoever may run
 * again, and releases what may run now. Resolves with the number of callers known (0: fair share
 * unused in `queue`) and the jobs released.
 */
export async function heal(redis: RedisClient, prefix: string, queue: string): Promise<{ callers: number; released: number }> {
  const [callers, released] = (await FAIR_SHARE.run(redis, ...head(prefix, queue, 'heal'))) as [number, number];
  return { callers, released };
}

/** One caller's share of a queue: jobs parked, jobs released and not finished, its concurrency limit (0: none). */
export interface CallerShare {
  caller: string;
  waiting: number;
  running: number;
  concurrency: number;
}

/** Every caller known in `queue` (whoever submitted with fair share on), with its counts. */
export async function callerShares(redis: RedisClient, prefix: string, queue: string): Promise<CallerShare[]> {
  const flat = (await FAIR_SHARE.run(redis, ...head(prefix, queue, 'counts'))) as Array<string | number>;
  const shares: CallerShare[] = [];
  for (let i = 0; i < flat.length; i += 4) {
    shares.push({ caller: String(flat[i]), waiting: Number(flat[i + 1]), running: Number(flat[i + 2]), concurrency: Number(flat[i + 3]) });
  }
  return shares;
}

/** The caller's jobs parked in `queue` (for CALLER_MAX_QUEUED). */
export function parkedOf(redis: RedisClient, prefix: string, queue: string, caller: string): Promise<number> {
  return redis.zcard(fairKey(prefix, queue, `waiting:${caller}`));
}
