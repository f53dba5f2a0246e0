import { createHash } from 'node:crypto';
import { createKeyv } from '@keyv/redis';
import { CacheModule } from '@nestjs/cache-manager';
import type { DynamicModule } from '@nestjs/common';
import type { JobDefinition } from '../../libs/jobs/src';
import type { PeerEnv } from './peer.queue';

/** What the equal-guarantee peer caches per input: the result and the job that computed it. */
export interface CachedResult {
  id: string;
  result: unknown;
  createdAt: string;
}

/** How long a result is served from the cache: as long as the peer keeps finished jobs. */
export const RESULT_TTL_MS = 3_600_000;

/**
 * The key of a result: the type, its version and the validated input, hashed. It is also the job's
 * BullMQ deduplication id, so identical submissions in flight share one run.
 */
export function resultKey(def: JobDefinition, input: unknown): string {
  return createHash('sha256').update(JSON.stringify([def.name, def.version, input])).digest('base64url');
}

/** `@nestjs/cache-manager` on Redis, as its docs set it up: a Keyv store of `@keyv/redis`, under the peer's prefix. */
export function resultCacheModule({ redisUrl, prefix }: PeerEnv): DynamicModule {
  return CacheModule.register({ stores: [createKeyv(redisUrl, { namespace: `${prefix}:results` })], ttl: RESULT_TTL_MS });
}
