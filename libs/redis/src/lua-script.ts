import { createHash } from 'node:crypto';
import type { RedisClient } from './redis.factory';

/**
 * A Lua script that goes out by its SHA1 (EVALSHA), with its body only when a server does not have
 * it yet (a restart, a failover, another Cluster shard). why not EVAL: EVAL sends the body with every
 * call and Redis hashes it every time; on a per-job script that is bytes and Redis CPU for nothing.
 */
export class LuaScript {
  private readonly sha: string;

  constructor(
    private readonly lua: string,
    private readonly keys: number,
  ) {
    this.sha = createHash('sha1').update(lua).digest('hex');
  }

  /** Runs the script on `redis` with `keys` keys first, then the arguments. */
  async run(redis: RedisClient, ...args: (string | number)[]): Promise<unknown> {
    try {
      return await redis.evalsha(this.sha, this.keys, ...args);
    } catch (error) {
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
      return redis.eval(this.lua, this.keys, ...args);
    }
  }
}
