import type { IncomingMessage, ServerResponse } from 'node:http';
import { Inject, Injectable, Logger, NestMiddleware } from '@nestjs/common';
import { CONFIG, type Config } from '@app/config';
import { queueKeys } from '@app/queue';
import type { RedisClient } from '@app/redis';
import { ApiError } from '../http/api-error';
import { QUEUE_REDIS } from '../queues/queue.providers';
import { ApiKeys, presentedKey, roleKeys } from './api-keys';
import { AuthFailures, tooManyFailures } from './auth-failures';
import { attachCaller, keyScope } from './caller';
import { clientAddress, hashedAddress, TrustedProxies } from './client-address';
import { RateLimiter } from './rate-limiter';

const unauthorized = () =>
  new ApiError('UNAUTHORIZED', 'A valid API key is required (Authorization: Bearer <key> or x-api-key)', {
    headers: { 'www-authenticate': 'Bearer realm="nest-offload"' },
  });

/**
 * Who may call /v1, and how often. Runs as middleware, before the body is read, so a caller without
 * a key or over its budget cannot make the API parse megabytes first. A wrong key costs its address
 * one of its tries (AuthFailures); a right key costs no Redis round trip; an admin key is refused
 * here (403).
 */
@Injectable()
export class AccessMiddleware implements NestMiddleware {
  private readonly logger = new Logger('Access');
  private readonly keys: ApiKeys;
  private readonly failures: AuthFailures;
  private readonly proxies: TrustedProxies;
  private readonly limiter?: RateLimiter;

  constructor(@Inject(CONFIG) private readonly config: Config, @Inject(QUEUE_REDIS) redis: RedisClient) {
    this.keys = new ApiKeys(roleKeys(config));
    this.failures = new AuthFailures(redis, config.redisPrefix);
    this.proxies = new TrustedProxies(config.trustedProxies, config.trustedProxyHops);
    if (config.rateLimitPerMinute > 0) {
      this.limiter = new RateLimiter(redis, queueKeys(config.redisPrefix).rateLimit, config.rateLimitPerMinute, config.rateLimitBurst);
    }
  }

  async use(req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void): Promise<void> {
    try {
      const error = await this.admit(req);
      next(error);
    } catch (error) {
      next(error);
    }
  }

  /** Attaches the caller to `req`, or says why not. */
  private async admit(req: IncomingMessage): Promise<ApiError | undefined> {
    let keyName: string | undefined;
    if (this.config.apiKeys.length > 0) {
      const presented = presentedKey(req.headers);
      // No key at all is no guess: refused without a look at Redis.
      if (presented === undefined) return unauthorized();
      const holder = this.keys.identify(presented);
      if (!holder) {
        const outcome = await this.failures.wrongKey(clientAddress(req, this.proxies));
        return 'retryAfterSeconds' in outcome ? tooManyFailures(outcome.retryAfterSeconds) : unauthorized();
      }
      if (holder.role !== 'client') return new ApiError('FORBIDDEN', 'That is an admin key (ADMIN_API_KEYS); /v1 takes the keys of API_KEYS');
      keyName = holder.name;
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
    if (granted === 0) return new ApiError('RATE_LIMITED', 'Too many requests; slow down', { retryAfterSeconds });
    attachCaller(req, { scope: keyScope(keyName), charge });
    return undefined;
  }

  /** The rate-limit budget a request counts against: its API key, or its (hashed) address. */
  private clientOf(req: IncomingMessage, keyName: string | undefined): string {
    if (keyName) return `key:${keyName}`;
    // why hashed: the rate-limit key in Redis should not hold client addresses in clear.
    return `ip:${hashedAddress(clientAddress(req, this.proxies))}`;
  }
}
