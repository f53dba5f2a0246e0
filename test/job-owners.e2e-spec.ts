import { Redis } from 'ioredis';
import type { Config } from '@app/config';
import { JobRegistry } from '@app/jobs';
import { jobTagsKey, listingEndsKey, listingKey, listUntil, ownersKey, PAGE, SWEEP_ENDED, sweepArgs } from '@app/queue';
import { JobOwners } from '../apps/api/src/jobs/job-owners';
import { RedisServer } from './support/redis';

/** JobOwners on a Redis of the test's own, whose command counts are the test's alone. */
describe('job owners', () => {
  const prefix = 'owners-test';
  const registry = JobRegistry.forConfig({ chaosJobs: false });
  let server: RedisServer;
  let redis: Redis;
  let admin: Redis;
  let owners: JobOwners;
  beforeAll(async () => {
    server = await RedisServer.start();
    redis = new Redis(server.url);
    admin = new Redis(server.url);
    owners = new JobOwners(redis, redis, { apiKeys: [{ name: 'a', key: 'k'.repeat(32) }], redisPrefix: prefix } as unknown as Config, registry);
  });
  afterAll(async () => {
    await Promise.all([redis?.quit(), admin?.quit()]);
    await server?.stop();
  });
  const sadds = async () => Number(/cmdstat_sadd:calls=(\d+)/.exec(await admin.info('commandstats'))?.[1] ?? 0);

  it("records a cache hit's caller once per replica while the result lives; other callers, expired results and new jobs are written", async () => {
    const until = Date.now() + 60_000;
    await owners.add('default', [], 'alice', [{ id: 'done-1', expiresAt: until }]);
    expect(await sadds()).toBe(1);
    await expect(owners.owns('done-1', 'alice')).resolves.toBe(true);
    // The same caller again: its record stays as long as the result, nothing to write.
    await owners.add('default', [], 'alice', [{ id: 'done-1', expiresAt: until }]);
    expect(await sadds()).toBe(1);
    // Another caller is recorded.
    await owners.add('default', [], 'bob', [{ id: 'done-1', expiresAt: until }]);
    expect(await sadds()).toBe(2);
    await expect(owners.owns('done-1', 'bob')).resolves.toBe(true);
    // A result past its expiry, or of unknown expiry, is written each time.
    await owners.add('default', [], 'carol', [{ id: 'done-2', expiresAt: Date.now() - 1 }]);
    await owners.add('default', [], 'carol', [{ id: 'done-2' }]);
    expect(await sadds()).toBe(4);
    // A job added or joined is written each time: its owners may still withdraw while it runs.
    await owners.add('default', ['running-1'], 'alice', [{ id: 'done-1', expiresAt: until }]);
    await owners.add('default', ['running-1'], 'alice');
    expect(await sadds()).toBe(6);
    // A set the hit created has the in-flight lifetime.
    expect(await redis.ttl(ownersKey(prefix, 'default', 'done-2'))).toBeGreaterThan(24 * 3600);
  });

  it('records nothing without API keys', async () => {
    const before = await sadds();
    const open = new JobOwners(redis, redis, { apiKeys: [], redisPrefix: prefix } as unknown as Config, registry);
    await open.add('default', ['x'], 'anyone', [{ id: 'y', expiresAt: Date.now() + 60_000 }]);
    expect(await sadds()).toBe(before);
    await expect(open.owns('x', 'someone-else')).resolves.toBe(true);
  });

  it("lists a job under its caller, every caller and each of its caller's tags, and forgets it everywhere once it has ended", async () => {
    await owners.add('default', ['job-1'], 'alice', [], ['order:42', 'export']);
    await owners.add('default', ['job-1'], 'bob');
    await owners.add('default', ['job-2'], 'bob', [], ['export']);
    const indexes = [listingKey(prefix, 'default', 'alice'), listingKey(prefix, 'default', 'alice', 'order:42'), listingKey(prefix, 'default', 'alice', 'export'), listingKey(prefix, 'default', 'bob'), listingKey(prefix, 'default')];
    for (const key of indexes) expect(await redis.zscore(key, 'job-1')).not.toBeNull();
    await expect(owners.tagsOf('job-1', 'alice')).resolves.toEqual(['order:42', 'export']);
    await expect(owners.tagsOf('job-1', 'bob')).resolves.toBeUndefined();
    const page = async (key: string) => (await PAGE.run(redis, key, '+inf', '', '-inf', 10)) as string[];
    // Newest first, the cache hit Bob got in the first test last; a cursor (score and id) goes on strictly after it.
    const bobs = await page(listingKey(prefix, 'default', 'bob'));
    expect(bobs.filter((_, i) => i % 2 === 0)).toEqual(['job-2', 'job-1', 'done-1']);
    expect(await PAGE.run(redis, listingKey(prefix, 'default', 'bob'), bobs[3], 'job-1', '-inf', 10)).toEqual(bobs.slice(4));

    // Ended a minute ago (a worker or a cancel set when); the sweep forgets it in every index, once.
    const sweep = () => SWEEP_ENDED.run(redis, listingEndsKey(prefix, 'default'), Date.now(), 100, ...sweepArgs(prefix, 'default', true, 'anonymous'));
    await sweep(); // what the first test left ended (done-2's result expired)
    await listUntil(redis, prefix, 'default', 'job-1', Date.now() - 60_000);
    await expect(sweep()).resolves.toBe(1);
    for (const key of indexes) expect(await redis.zscore(key, 'job-1')).toBeNull();
    expect(await redis.exists(jobTagsKey(prefix, 'default', 'job-1'))).toBe(0);
    // job-2 is still in flight: listed until its end.
    expect(await redis.zscore(listingKey(prefix, 'default', 'bob', 'export'), 'job-2')).not.toBeNull();
    await expect(sweep()).resolves.toBe(0);
  });
});
