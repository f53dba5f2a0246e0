import { pbkdf2Sync } from 'node:crypto';
import { canonicalJson, contentKey } from './content-key';
import { defineJob, SILENT_LOG } from './define-job';
import { fibonacci } from './fibonacci.job';
import { formatFailure, JobFailureCode, parseFailure } from './job-failure';
import { pbkdf2 } from './pbkdf2.job';
import { allJobs, JobRegistry } from './registry';
import { sort } from './sort.job';
import { sum, sumTo } from './sum.job';
import { z } from 'zod';

const ctx = { attempt: 1, progress: () => undefined, log: SILENT_LOG };

describe('job types', () => {
  it('fibonacci computes the sequence', () => {
    expect([0, 1, 2, 10, 30].map((n) => fibonacci.run({ n }, ctx))).toEqual([0, 1, 1, 55, 832040]);
  });

  it('pbkdf2 matches node:crypto, with the documented defaults', () => {
    const input = pbkdf2.input.parse({ password: 'pw', salt: 'salt', iterations: 1000 });
    expect(input).toEqual({ password: 'pw', salt: 'salt', iterations: 1000, keylen: 64, digest: 'sha512' });
    expect(pbkdf2.run(input, ctx)).toEqual({ hash: pbkdf2Sync('pw', 'salt', 1000, 64, 'sha512').toString('hex') });
  });

  it('pbkdf2 accepts its maximum work in any shape', () => {
    for (const input of [
      { iterations: 10_000_000 },
      { iterations: 10_000_000, keylen: 20, digest: 'sha1' },
      { iterations: 5_000_000, keylen: 128 },
      { iterations: 1, keylen: 1024, digest: 'sha1' },
    ]) {
      expect(pbkdf2.input.safeParse({ password: 'p', salt: 's', ...input }).success).toBe(true);
    }
  });

  it('sum is exact beyond 2^53 and reports progress', () => {
    expect(sumTo(10)).toBe(55n);
    expect(sumTo(1)).toBe(1n);
    // 1e8: partial sums are folded into a BigInt long before 2^53.
    expect(sumTo(1e8)).toBe((10n ** 8n * (10n ** 8n + 1n)) / 2n);
    expect(sum.run({ n: 123_456_789 }, ctx)).toBe(((123_456_789n * 123_456_790n) / 2n).toString());
    const reports: number[] = [];
    sumTo(3e8, (p) => reports.push(p));
    expect(reports.length).toBeGreaterThan(0);
    expect(reports.every((p, i) => p >= 0 && p < 100 && (i === 0 || p >= reports[i - 1]))).toBe(true);
  });

  it('sorts numerically both ways', () => {
    expect(sort.run({ numbers: [10, -2, 3.5, 1e9, 0], order: 'asc' }, ctx)).toEqual({ sorted: [-2, 0, 3.5, 10, 1e9] });
    expect(sort.run({ numbers: [1, 3, 2], order: 'desc' }, ctx)).toEqual({ sorted: [3, 2, 1] });
  });

  it.each([
    [fibonacci, { n: 51 }],
    [fibonacci, { n: 1.5 }],
    [fibonacci, { n: '5' }],
    [fibonacci, { n: 5, extra: true }],
    [pbkdf2, { password: '', salt: 's', iterations: 1 }],
    [pbkdf2, { password: 'p', salt: 's', iterations: 10_000_001 }],
    [pbkdf2, { password: 'p', salt: 's', iterations: 1, digest: 'md5' }],
    [pbkdf2, { password: 'p', salt: 's', iterations: 10_000_000, keylen: 1024, digest: 'sha1' }],
    [pbkdf2, { password: 'p', salt: 's', iterations: 5_000_001, keylen: 65 }],
    [sum, { n: 0 }],
    [sum, { n: 1e12 + 1 }],
    [sort, { numbers: [1, 'a'] }],
    [sort, { numbers: [1], order: 'up' }],
  ])('%s rejects %j', (def, input) => {
    expect(def.input.safeParse(input).success).toBe(false);
  });
});

describe('contentKey', () => {
  it('ignores key order and applies defaults before hashing', () => {
    const a = pbkdf2.input.parse({ password: 'p', salt: 's', iterations: 5 });
    const b = pbkdf2.input.parse({ iterations: 5, digest: 'sha512', salt: 's', keylen: 64, password: 'p' });
    expect(contentKey(pbkdf2, canonicalJson(a))).toBe(contentKey(pbkdf2, canonicalJson(b)));
  });

  it('differs by type, version and input', () => {
    const keys = new Set([
      contentKey({ name: 'fibonacci', version: 1 }, '{"n":5}'),
      contentKey({ name: 'fibonacci', version: 2 }, '{"n":5}'),
      contentKey({ name: 'sum', version: 1 }, '{"n":5}'),
      contentKey({ name: 'fibonacci', version: 1 }, '{"n":6}'),
    ]);
    expect(keys.size).toBe(4);
  });

  it("scopes a `share: 'caller'` type's key to the caller, and only that type's", () => {
    const input = '{"password":"hunter2"}';
    const caller = { name: 'pbkdf2', version: 1, share: 'caller' as const };
    expect(contentKey(caller, input, 'key:alice')).not.toBe(contentKey(caller, input, 'key:bob'));
    expect(contentKey(caller, input, 'key:alice')).toBe(contentKey(caller, input, 'key:alice'));
    expect(contentKey(caller, input, 'key:alice')).not.toContain('alice');
    expect(contentKey({ name: 'fibonacci', version: 1 }, '{"n":5}', 'key:alice')).toBe(contentKey({ name: 'fibonacci', version: 1 }, '{"n":5}', 'key:bob'));
    expect(pbkdf2.share).toBe('caller');
  });

  it('writes canonical JSON recursively and keeps array order', () => {
    expect(canonicalJson({ b: [3, { d: 1, c: 2 }], a: null })).toBe('{"a":null,"b":[3,{"c":2,"d":1}]}');
  });
});

describe('JobRegistry', () => {
  it('refuses a doubled job type', () => {
    expect(() => new JobRegistry([fibonacci, fibonacci])).toThrow(/registered twice/);
  });

  it('refuses an empty registry and a type without run', () => {
    expect(() => new JobRegistry([])).toThrow(/no job types/);
    expect(() => new JobRegistry([{ ...fibonacci, run: undefined } as never])).toThrow(/no run function/);
  });

  it('registers chaos only when asked', () => {
    expect(JobRegistry.forConfig({ chaosJobs: false }).get('chaos')).toBeUndefined();
    expect(JobRegistry.forConfig({ chaosJobs: true }).get('chaos')).toBeDefined();
    expect(new JobRegistry(allJobs).list()).toHaveLength(allJobs.length);
  });

  it('defineJob validates the declaration', () => {
    const base = { version: 1, description: '', input: z.object({}), output: z.null(), timeoutMs: 1, cacheTtlSeconds: 0, run: () => null };
    expect(() => defineJob({ ...base, name: 'Bad Name' })).toThrow(/name must match/);
    expect(() => defineJob({ ...base, name: 'ok', version: 0 })).toThrow(/version/);
    expect(defineJob({ ...base, name: 'ok' }).retry).toEqual({ attempts: 3, backoffMs: 1000 });
  });
});

describe('job failures', () => {
  it('round-trip through BullMQ failedReason text', () => {
    expect(parseFailure(formatFailure(JobFailureCode.JOB_TIMEOUT, 'too slow: 5 ms'))).toEqual({ code: 'JOB_TIMEOUT', message: 'too slow: 5 ms' });
  });

  it('reads reasons BullMQ wrote itself as JOB_LOST', () => {
    expect(parseFailure('job stalled more than allowable limit')).toEqual({ code: 'JOB_LOST', message: 'job stalled more than allowable limit' });
    expect(parseFailure('NOT_A_CODE: x').code).toBe('JOB_LOST');
    expect(parseFailure(undefined).code).toBe('JOB_LOST');
  });
});
