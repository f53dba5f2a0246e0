import type { IncomingMessage, ServerResponse } from 'node:http';
import { createHash } from 'node:crypto';
import { Inject, Injectable, Logger, NestMiddleware } from '@nestjs/common';
import { CONFIG, type Config } from '@app/config';
import type { RedisClient } from '@app/redis';
import { ApiError } from '../http/api-error';
import { QUEUE_REDIS } from '../jobs/queue.providers';
import { ApiKeys } from './api-keys';
import { attachCaller, keyScope } from './caller';
import { clientAddress } from './client-address';
import { RateLimiter } from './rate-limiter';

/**
 * Who may call /v1, and how often. Runs as middleware, before the body is read, so a caller without
 * a key or over its budget cannot make the API parse megabytes first.
 */
@Injectable()
export class AccessMiddleware implements NestMiddleware {
  private readonly logger = new Logger('Access');
  private readonly keys: ApiKeys;
  private readonly limiter?: RateLimiter;

  constructor(@Inject(CONFIG) private readonly config: Config, @Inject(QUEUE_REDIS) redis: RedisClient) {
    this.keys = new ApiKeys(config.apiKeys);
    if (config.rateLimitPerMinute > 0) {
      this.limiter = new RateLimiter(redis, config.redisPrefix, config.rateLimitPerMinute, config.rateLimitBurst);
    }
  }

  async use(req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void): Promise<void> {
    let keyName: string | undefined;
    if (this.keys.enabled) {
      keyName = this.keys.identify(req.headers);
      if (!keyName) {
        return next(
          new ApiError('UNAUTHORIZED', 'A valid API key is required (Authorization: Bearer <key> or x-api-key)', {
            headers: { 'www-authenticate': 'Bearer realm="nest-offload"' },
          }),
        );
      }
    }
    const limiter = this.limiter;
    const client = limiter ? this.clientOf(req, keyName) : '';
    const charge = async (wanted: number) =>
      limiter
        ? limiter.takeUpTo(client, wanted).catch((error: unknown) => {
            // why fail open: the limiter protects Redis-backed work, which answers 503 by itself if Redis is down.
            this.logger.warn(`rate limiter unavailable, letting the request through: ${String(error)}`);
            return { granted: wanted, retryAfterSeconds: 0 };
          })
        : { granted: wanted, retryAfterSeconds: 0 };
    // The request itself costs one; a batch charges its other items once it has read them.
    const { granted, retryAfterSeconds } = await charge(1);
    if (granted === 0) return next(new ApiError('RATE_LIMITED', 'Too many requests; slow down', { retryAfterSeconds }));
    attachCaller(req, { scope: keyScope(keyName), charge });
    next();
  }

  /** The rate-limit budget a request counts against: its API key, or its (hashed) address. */
  private clientOf(req: IncomingMessage, keyName: string | undefined): string {
    if (keyName) return `key:${keyName}`;
    // why hashed: the rate-limit key in Redis should not hold client addresses in clear.
    return `ip:${createHash('sha256').update(clientAddress(req, this.config.trustProxyHops)).digest('base64url').slice(0, 22)}`;
  }
}
