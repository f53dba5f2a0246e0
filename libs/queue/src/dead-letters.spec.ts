import { randomBytes } from 'node:crypto';
import IORedis from 'ioredis';
import { blobKeyOf } from '@app/blobs';
import { BlobLeases } from './blob-leases';
import { keepDeadLetter, RETURN_LAPSED_CLAIMS, SETTLE_CLAIMS } from './dead-letters';
import { blobLeaseKey, bullKey, deadLetterClaimsKey, deadLetterKey, deadLettersKey, replayJobId } from './queue.keys';

// why a Redis: the dead letter and the leases are scripts; this spec's keys have a prefix of their own.
describe('keepDeadLetter', () => {
  const redis = new IORedis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { lazyConnect: true, maxRetriesPerRequest: 1 });
  const prefix = `dl-spec-${randomBytes(4).toString('hex')}`;

  afterAll(async () => {
    await redis.del(deadLettersKey(prefix, 'default'), deadLetterKey(prefix, 'default', '7'), blobLeaseKey(prefix, 'leases'));
    redis.disconnect();
  });

  it('keeps the input files of a job it keeps as long as the dead letter, so a replay finds them', async () => {
    const sha256 = randomBytes(32).toString('hex');
    const failedAt = Date.now();
    // The run's lease (the job's retention, an hour) is all the file had.
    await new BlobLeases(redis as never, prefix).hold([blobKeyOf(sha256)], failedAt + 3600_000);
    const kept = await keepDeadLetter(redis as never, prefix, {
      id: '7',
      name: 'fibonacci',
      queueName: 'default',
      data: { inputJson: '{}', version: 1, key: 'k', files: { image: { sha256, bytes: 10, contentType: 'application/octet-stream' } } },
      attemptsMade: 3,
      timestamp: failedAt - 1000,
      finishedOn: failedAt,
      failedReason: 'bad image',
    }, 30 * 24 * 3600);
    expect(kept).toBe(true);
    const lease = Number(await redis.zscore(blobLeaseKey(prefix, 'leases'), blobKeyOf(sha256)));
    expect(lease).toBeGreaterThanOrEqual(failedAt + 30 * 24 * 3600_000);
  });
});

describe('RETURN_LAPSED_CLAIMS, SETTLE_CLAIMS and replayJobId', () => {
  const redis = new IORedis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { lazyConnect: true, maxRetriesPerRequest: 1 });
  const prefix = `dl-spec-${randomBytes(4).toString('hex')}`;
  const keys: string[] = [];

  afterAll(async () => {
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
  });

  it('records the job a lapsed claim’s replay added, under the id replayJobId derives (the script derives the same), and puts back the others', async () => {
    const failedAt = Date.now();
    const ids = ['6f1c2d3e-0000-4000-8000-000000000001', 'repeat:report:daily:1764300000000', 'x'];
    const added = replayJobId(ids[0], failedAt);
    const keptAsDeadLetter = replayJobId(ids[1], failedAt);
    const index = deadLettersKey(prefix, 'default');
    const claims = deadLetterClaimsKey(prefix, 'default');
    keys.push(index, claims, bullKey(prefix, 'default', added), deadLetterKey(prefix, 'default', keptAsDeadLetter), ...ids.map((id) => deadLetterKey(prefix, 'default', id)));
    for (const id of ids) await redis.hset(deadLetterKey(prefix, 'default', id), 'type', 'fibonacci', 'failedAt', String(failedAt));
    await redis.zadd(claims, ...ids.flatMap((id) => [failedAt - 1, id]));
    // The first one's job is in BullMQ; the second's failed again and is a dead letter of its own; the third's never got added.
    await redis.hset(bullKey(prefix, 'default', added), 'name', 'fibonacci');
    await redis.hset(deadLetterKey(prefix, 'default', keptAsDeadLetter), 'type', 'fibonacci', 'failedAt', String(failedAt + 1));
    const reply = await RETURN_LAPSED_CLAIMS.run(redis as never, index, claims, failedAt, deadLetterKey(prefix, 'default', ''), 100, bullKey(prefix, 'default', ''));
    expect(reply).toEqual([1, [ids[0], added, ids[1], keptAsDeadLetter]]);
    expect(await redis.hget(deadLetterKey(prefix, 'default', ids[0]), 'replayedAs')).toBe(added);
    expect(await redis.hget(deadLetterKey(prefix, 'default', ids[1]), 'replayedAs')).toBe(keptAsDeadLetter);
    expect(await redis.hget(deadLetterKey(prefix, 'default', ids[2]), 'replayedAs')).toBeNull();
    expect(await redis.zrange(index, 0, -1)).toEqual(['x']);
    expect(await redis.zcard(claims)).toBe(0);
  });

  it('settles the claims a replay gives up at once, the same way, and answers the job each names', async () => {
    const failedAt = Date.now();
    const [added, notAdded, settledBefore] = ['a', 'b', 'c'].map((id) => `${id}-${failedAt}`);
    const job = replayJobId(added, failedAt);
    const index = deadLettersKey(prefix, 'heavy');
    const claims = deadLetterClaimsKey(prefix, 'heavy');
    keys.push(index, claims, bullKey(prefix, 'heavy', job), ...[added, notAdded, settledBefore].map((id) => deadLetterKey(prefix, 'heavy', id)));
    for (const id of [added, notAdded, settledBefore]) await redis.hset(deadLetterKey(prefix, 'heavy', id), 'type', 'spin', 'failedAt', String(failedAt));
    // Claimed for another minute; the third's claim a sweep has settled already (it named its job).
    await redis.zadd(claims, failedAt + 60_000, added, failedAt + 60_000, notAdded);
    await redis.hset(deadLetterKey(prefix, 'heavy', settledBefore), 'replayedAs', 'some-job');
    await redis.hset(bullKey(prefix, 'heavy', job), 'name', 'spin');
    const named = await SETTLE_CLAIMS.run(redis as never, index, claims, failedAt, deadLetterKey(prefix, 'heavy', ''), bullKey(prefix, 'heavy', ''), added, notAdded, settledBefore);
    expect(named).toEqual([job, '', 'some-job']);
    expect(await redis.zrange(index, 0, -1)).toEqual([notAdded]);
    expect(await redis.zcard(claims)).toBe(0);
  });

  it('derives a UUID BullMQ takes as a job id, one per dead letter and failure', () => {
    const id = replayJobId('6f1c2d3e-0000-4000-8000-000000000001', 1764300000000);
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-8[0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(replayJobId('6f1c2d3e-0000-4000-8000-000000000001', 1764300000000)).toBe(id);
    expect(replayJobId('6f1c2d3e-0000-4000-8000-000000000001', 1764300000001)).not.toBe(id);
    expect(replayJobId(id, 1764300000001)).not.toBe(id);
  });
});
