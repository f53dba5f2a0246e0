import IORedis from 'ioredis';
import { ResultCache } from '@app/cache';
import { queueKeys } from '@app/queue';
import { uniquePrefix } from './support/apps';

/** The result cache against a real Redis, with its in-process layer. */
describe('ResultCache', () => {
  const redis = new IORedis(process.env.E2E_REDIS_URL!);
  const prefix = uniquePrefix('cache');
  const entry = (id: string) => ({ id, type: 'fibonacci', result: 55, attempts: 1, createdAt: 1, finishedAt: 2 });

  afterAll(async () => {
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length) await redis.del(...keys);
    redis.disconnect();
  });

  it('stores by content key and by job id, with the TTL', async () => {
    const cache = new ResultCache(redis, prefix);
    await cache.set('fibonacci:v1:a', entry('job-a'), 60);
    expect(await cache.get('fibonacci:v1:a')).toMatchObject({ id: 'job-a', result: 55 });
    expect(await cache.getById('job-a')).toMatchObject({ id: 'job-a' });
    expect(await redis.ttl(queueKeys(prefix).cacheEntry('fibonacci:v1:a'))).toBeGreaterThan(55);
    expect(await cache.get('fibonacci:v1:unknown')).toBeUndefined();
  });

  it('answers a repeated read from memory, and not past the entry expiry', async () => {
    const writer = new ResultCache(redis, prefix);
    const reader = new ResultCache(redis, prefix, 1024 ** 2);
    await writer.set('fibonacci:v1:b', entry('job-b'), 1);
    expect(await reader.get('fibonacci:v1:b')).toMatchObject({ id: 'job-b' });
    await redis.del(queueKeys(prefix).cacheEntry('fibonacci:v1:b'));
    expect(await reader.get('fibonacci:v1:b')).toMatchObject({ id: 'job-b' }); // from memory
    expect(await new ResultCache(redis, prefix).get('fibonacci:v1:b')).toBeUndefined(); // really gone from Redis
    await new Promise((resolve) => setTimeout(resolve, 1100));
    expect(await reader.get('fibonacci:v1:b')).toBeUndefined();
  });

  it('does nothing for a TTL of 0', async () => {
    const cache = new ResultCache(redis, prefix);
    await cache.set('chaos:v1:c', entry('job-c'), 0);
    expect(await cache.get('chaos:v1:c')).toBeUndefined();
  });
});
