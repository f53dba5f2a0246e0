import { LuaScript, type RedisClient } from '@app/redis';

/**
 * One Idempotency-Key's record, kept as JSON in one Redis key for IDEMPOTENCY_TTL_SECONDS.
 * `result` is absent while its owner is still enqueueing ("pending").
 */
export interface IdempotencyRecord {
  /** Fingerprint of the request that first used the key. */
  fp: string;
  /** The job id the request enqueues under (a batch derives its items' ids from it). */
  planned: string;
  /** The request (any replica) currently enqueueing it. */
  owner: string;
  /** Redis time (ms) the owner claimed it: a pending record older than the lease is taken over. */
  at: number;
  /** What the request produced: a job id, or a batch's entries as JSON. */
  result?: string;
}

const NOW = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

/**
 * Creates the record if there is none (a new claim), or takes over a pending one whose owner's lease
 * ran out (that owner died between claiming and settling: the new owner enqueues under the same
 * planned id, which BullMQ adds at most once), else leaves it alone. Returns the record as it is now.
 * KEYS[1] record; ARGV fp, planned, owner, ttl seconds, lease ms.
 */
const CLAIM = new LuaScript(`${NOW}
local raw = redis.call('GET', KEYS[1])
if raw then
  local r = cjson.decode(raw)
  if r.fp ~= ARGV[1] or r.result ~= nil or now - r.at < tonumber(ARGV[5]) then return raw end
  r.owner = ARGV[3]
  r.at = now
  raw = cjson.encode(r)
  redis.call('SET', KEYS[1], raw, 'KEEPTTL')
  return raw
end
raw = cjson.encode({fp = ARGV[1], planned = ARGV[2], owner = ARGV[3], at = now})
redis.call('SET', KEYS[1], raw, 'EX', ARGV[4])
return raw`, 1);

/**
 * Records the result of a pending record; the first to settle wins (an owner and the one that took
 * over enqueue the same jobs). Returns the record as it is now, or nil if it is gone.
 * KEYS[1] record; ARGV result.
 */
const SETTLE = new LuaScript(`local raw = redis.call('GET', KEYS[1])
if not raw then return nil end
local r = cjson.decode(raw)
if r.result ~= nil then return raw end
r.result = ARGV[1]
raw = cjson.encode(r)
redis.call('SET', KEYS[1], raw, 'KEEPTTL')
return raw`, 1);

/** Deletes a pending record its owner failed to enqueue, so a retry starts afresh. KEYS[1]; ARGV owner. */
const RELEASE = new LuaScript(`local raw = redis.call('GET', KEYS[1])
if not raw then return 0 end
local r = cjson.decode(raw)
if r.result == nil and r.owner == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`, 1);

/** The records, one key each (single-key scripts: fine on Redis Cluster). */
export class IdempotencyStore {
  constructor(private readonly redis: RedisClient) {}

  async claim(key: string, claim: { fp: string; planned: string; owner: string }, ttlSeconds: number, leaseMs: number): Promise<IdempotencyRecord> {
    const raw = (await CLAIM.run(this.redis, key, claim.fp, claim.planned, claim.owner, ttlSeconds, leaseMs)) as string;
    return JSON.parse(raw) as IdempotencyRecord;
  }

  async settle(key: string, result: string): Promise<IdempotencyRecord | undefined> {
    const raw = (await SETTLE.run(this.redis, key, result)) as string | null;
    return raw === null ? undefined : (JSON.parse(raw) as IdempotencyRecord);
  }

  async release(key: string, owner: string): Promise<void> {
    await RELEASE.run(this.redis, key, owner);
  }
}
