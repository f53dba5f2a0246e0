import type IORedis from 'ioredis';

/** A completed job's result as the cache keeps it: enough to answer POST and GET without the job. */
export interface CachedResult {
  id: string;
  type: string;
  result: unknown;
  attempts: number;
  createdAt: number;
  startedAt?: number;
  finishedAt: number;
}

/**
 * Completed results in Redis, keyed by the job's content key and shared by every replica.
 * A second key maps the job id to its content key, so GET /v1/jobs/{id} works after BullMQ
 * has dropped the job itself. The cache may live on its own Redis (CACHE_REDIS_URL) with an LRU
 * policy: losing an entry only means the work runs again.
 */
export class ResultCache {
  constructor(
    private readonly redis: IORedis,
    private readonly prefix: string,
  ) {}

  private entryKey(contentKey: string): string {
    return `${this.prefix}:cache:${contentKey}`;
  }

  private idKey(id: string): string {
    return `${this.prefix}:cache-id:${id}`;
  }

  async get(contentKey: string): Promise<CachedResult | undefined> {
    const raw = await this.redis.get(this.entryKey(contentKey));
    return raw === null ? undefined : (JSON.parse(raw) as CachedResult);
  }

  async getById(id: string): Promise<CachedResult | undefined> {
    const contentKey = await this.redis.get(this.idKey(id));
    return contentKey === null ? undefined : this.get(contentKey);
  }

  async set(contentKey: string, entry: CachedResult, ttlSeconds: number): Promise<void> {
    if (ttlSeconds <= 0) return;
    // why a pipeline, not MULTI: one round trip either way, half the commands; a missing id key only
    // means GET by id falls back to "not found" once BullMQ has dropped the job.
    const results = await this.redis
      .pipeline()
      .set(this.entryKey(contentKey), JSON.stringify(entry), 'EX', ttlSeconds)
      .set(this.idKey(entry.id), contentKey, 'EX', ttlSeconds)
      .exec();
    const failed = results?.find(([error]) => error)?.[0];
    if (failed) throw failed;
  }
}
