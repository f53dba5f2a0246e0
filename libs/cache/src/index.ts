export { CACHE_REDIS, CacheModule } from './cache.module';
export { ResultCache } from './result-cache';
export type { CachedResult } from './result-cache';
