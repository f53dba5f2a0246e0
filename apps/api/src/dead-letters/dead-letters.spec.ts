import { type DeadLetter, deadLetterClaimsKey, deadLettersKey } from '@app/queue';
import { DeadLetters } from './dead-letters';

jest.mock('../jobs/job-input', () => ({ prepareJob: (def: unknown, input: unknown) => ({ def, inputJson: JSON.stringify(input), key: 'k' }) }));

const letter = (id: string, owner: string): DeadLetter => ({
  id,
  queue: 'q',
  type: 'fibonacci',
  version: 1,
  inputJson: '{}',
  code: 'JOB_FAILED',
  message: 'boom',
  attempts: 1,
  createdAt: 1,
  failedAt: 2,
  owners: [owner],
  tags: {},
});

describe('dead letter replay', () => {
  it('answers a submission that fails with what it did not replay, and settles every claimed dead letter at once, those of the groups after it too', async () => {
    // SETTLE_CLAIMS (evalsha) finds no job under any derived id: every one is a dead letter again.
    const redis = { zadd: jest.fn(async () => 1), zrem: jest.fn(async () => 1), hset: jest.fn(async () => 1), evalsha: jest.fn(async (...args: unknown[]) => args.slice(7).map(() => '')) };
    const pipeline = { accept: jest.fn(async () => Promise.reject(new Error('redis down'))) };
    const logger = { child: () => ({ info: jest.fn(), warn: jest.fn() }) };
    const dead = new DeadLetters(
      { queues: () => ['q'], get: () => ({ name: 'fibonacci', queue: 'q' }) } as never,
      pipeline as never,
      { listed: (scope: string) => scope, add: jest.fn() } as never,
      { replayed: jest.fn() } as never,
      redis as never,
      { redisPrefix: 'p', deadLetterRetentionSeconds: 100 } as never,
      logger as never,
    );
    // Two owners: two groups, two submissions; the page script has claimed all three.
    const claimed = [letter('1', 'key:a'), letter('2', 'key:b'), letter('3', 'key:b')];
    (dead as unknown as { page: () => Promise<unknown> }).page = async () => ({ letters: claimed });
    const answer = await dead.replay({ limit: 10, dryRun: false }, 'ops');
    expect(answer).toMatchObject({ replayed: 0, jobs: [], originals: [] });
    expect(answer.skipped.map(({ id, code }) => [id, code])).toEqual([['1', 'QUEUE_UNAVAILABLE'], ['2', 'QUEUE_UNAVAILABLE'], ['3', 'QUEUE_UNAVAILABLE']]);
    // Their claims settled at once, all three in one call; the first submission's failure stopped the replay.
    expect(redis.evalsha.mock.calls.map((call: unknown[]) => [call[2], call[3], ...call.slice(7)])).toEqual([[deadLettersKey('p', 'q'), deadLetterClaimsKey('p', 'q'), '1', '2', '3']]);
    expect(pipeline.accept).toHaveBeenCalledTimes(1);
  });
});
