import { queueKeys, type QueueKeys } from '@app/queue';
import type { RedisClient } from '@app/redis';
import { MemoryLru } from './memory-lru';

/** Results larger than this (characters of JSON) are not kept in process memory. */
const MEMORY_ENTRY_MAX = 64 * 1024;

/** A completed job's result as the cache keeps it: enough to answer POST and GET without the job. */
export interface CachedResult {
  id: string;
  type: string;
  result: unknown;
  attempts: number;
  createdAt: number;
  startedAt?: number;
  finishedAt: number;
  /** When the entry leaves the cache (epoch ms). */
  expiresAt?: number;
}

/**
 * Completed results in Redis, keyed by the job's content key and shared by every replica.
 * A second key maps the job id to its content key, so GET /v1/jobs/{id} works after BullMQ
 * has dropped the job itself (written only for an entry that outlives its job: see `set`). The
 * cache may live on its own Redis (CACHE_REDIS_URL) with an LRU policy: losing an entry only means
 * the work runs again.
 *
 * Entries read from Redis are also kept in a small in-process LRU (CACHE_MEMORY_MB) until they
 * expire: a result never changes for its content key, so a repeated submission is answered without
 * a Redis round trip (cache hits measured ×1.9 with it).
 */
export class ResultCache {
  private readonly memory: MemoryLru<CachedResult>;
  private readonly keys: QueueKeys;

  constructor(
    private readonly redis: RedisClient,
    prefix: string,
    memoryBytes = 0,
  ) {
    this.keys = queueKeys(prefix);
    // why halved: a JSON string of n characters takes about 2n bytes in V8.
    this.memory = new MemoryLru(Math.floor(memoryBytes / 2), MEMORY_ENTRY_MAX);
  }

  private entryKey(contentKey: string): string {
    return this.keys.cacheEntry(contentKey);
  }

  private idKey(id: string): string {
    return this.keys.cacheId(id);
  }

  async get(contentKey: string): Promise<CachedResult | undefined> {
    const remembered = this.memory.get(contentKey);
    if (remembered) return remembered;
    const raw = await this.redis.get(this.entryKey(contentKey));
    if (raw === null) return undefined;
    const entry = JSON.parse(raw) as CachedResult;
    if (entry.expiresAt) this.memory.set(contentKey, entry, raw.length, entry.expiresAt);
    return entry;
  }

  /**
   * The entries of many content keys (a batch), in order: from memory where it can, the rest in one
   * round trip. why single-key GETs, not MGET: on a Redis Cluster the keys spread over hash slots,
   * which one MGET (or one pipeline) cannot span; there they go out as concurrent GETs instead.
   */
  async getMany(contentKeys: readonly string[]): Promise<Array<CachedResult | undefined>> {
    const entries = contentKeys.map((key) => this.memory.get(key));
    const missing = contentKeys.filter((_, i) => !entries[i]);
    if (missing.length === 0) return entries;
    const keys = missing.map((key) => this.entryKey(key));
    const raws = this.redis.isCluster
      ? await Promise.all(keys.map((key) => this.redis.get(key)))
      : (await this.redis.pipeline(keys.map((key) => ['get', key])).exec())!.map(([error, raw]) => {
          if (error) throw error;
          return raw as string | null;
        });
    let next = 0;
    return entries.map((entry, i) => {
      if (entry) return entry;
      const raw = raws[next++];
      if (raw === null) return undefined;
      const parsed = JSON.parse(raw) as CachedResult;
      if (parsed.expiresAt) this.memory.set(contentKeys[i], parsed, raw.length, parsed.expiresAt);
      return parsed;
    });
  }

  async getById(id: string): Promise<CachedResult | undefined> {
    const contentKey = await this.redis.get(this.idKey(id));
    return contentKey === null ? undefined : this.get(contentKey);
  }

  /**
   * Caches `result` under `contentKey` for `ttlSeconds`, and under its job's id unless `jobOutlives`:
   * BullMQ keeps the job at least as long as the entry, so GET by id finds the job itself until the
   * entry is gone (see JobProcessor), and the id key would be a write and a key per job for nothing.
   * (BullMQ counts the job's age from its completion, dated at the run's end, a moment before this
   * write: with the same TTL the entry outlives it by that moment, if a completion removes it then.)
   */
  async set(contentKey: string, result: Omit<CachedResult, 'expiresAt'>, ttlSeconds: number, jobOutlives = false): Promise<void> {
    if (ttlSeconds <= 0) return;
    const entry: CachedResult = { ...result, expiresAt: Date.now() + ttlSeconds * 1000 };
    const writes = [this.redis.set(this.entryKey(contentKey), JSON.stringify(entry), 'EX', ttlSeconds)];
    // why two commands, not a pipeline or MULTI: the two keys hash to different slots, which Redis
    // Cluster refuses in one MULTI and ioredis in one pipeline. Sent together they still cost one
    // round trip; a missing id key only means GET by id falls back to "not found" once BullMQ has
    // dropped the job.
    if (!jobOutlives) writes.push(this.redis.set(this.idKey(entry.id), contentKey, 'EX', ttlSeconds));
    await Promise.all(writes);
  }
}
