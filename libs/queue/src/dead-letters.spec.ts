import { randomBytes } from 'node:crypto';
import IORedis from 'ioredis';
import { blobKeyOf } from '@app/blobs';
import { BlobLeases } from './blob-leases';
import { keepDeadLetter } from './dead-letters';
import { blobLeaseKey, deadLetterKey, deadLettersKey } from './queue.keys';

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
