import { canonicalJson, contentKey } from './content-key';
import { defineJob } from './define-job';
import { formatFailure, isRetried, JobFailureCode, parseFailure } from './job-failure';
import { allJobs, JobRegistry } from './registry';
import { z } from 'zod';

// why local types: these test the machinery, which must not depend on an example someone may remove.
const base = { version: 1, description: '', output: z.null(), timeoutMs: 1, cacheTtlSeconds: 0, run: () => null };
const plain = defineJob({ ...base, name: 'plain', input: z.strictObject({ n: z.int() }) });
const withDefaults = defineJob({
  ...base,
  name: 'with-defaults',
  input: z.strictObject({ text: z.string(), size: z.int().default(64), mode: z.enum(['a', 'b']).default('a') }),
});

describe('contentKey', () => {
  it('ignores key order and applies defaults before hashing', () => {
    const a = withDefaults.input.parse({ text: 'p' });
    const b = withDefaults.input.parse({ mode: 'a', text: 'p', size: 64 });
    const c = withDefaults.input.parse({ text: 'p', size: 65 });
    expect(contentKey(withDefaults, canonicalJson(a))).toBe(contentKey(withDefaults, canonicalJson(b)));
    expect(contentKey(withDefaults, canonicalJson(c))).not.toBe(contentKey(withDefaults, canonicalJson(a)));
  });

  it('differs by type, version and input', () => {
    const keys = new Set([
      contentKey({ name: 'a', version: 1 }, '{"n":5}'),
      contentKey({ name: 'a', version: 2 }, '{"n":5}'),
      contentKey({ name: 'b', version: 1 }, '{"n":5}'),
      contentKey({ name: 'a', version: 1 }, '{"n":6}'),
    ]);
    expect(keys.size).toBe(4);
  });

  it('covers the files by their hashes, in any order, and leaves the keys of JSON-only jobs as they were', () => {
    const def = { name: 'thumb', version: 1 };
    const png = { image: 'aa'.repeat(32) };
    expect(contentKey(def, '{"w":1}', undefined, png)).not.toBe(contentKey(def, '{"w":1}'));
    expect(contentKey(def, '{"w":1}', undefined, png)).not.toBe(contentKey(def, '{"w":1}', undefined, { image: 'bb'.repeat(32) }));
    expect(contentKey(def, '{"w":1}', undefined, { a: '1', b: '2' })).toBe(contentKey(def, '{"w":1}', undefined, { b: '2', a: '1' }));
    expect(contentKey(def, '{"w":1}', undefined, {})).toBe(contentKey(def, '{"w":1}'));
    expect(contentKey(def, '{"w":1}')).toBe('thumb:v1:FGK7Sh0_A_ts5LbLa7zWFVxBcWCsjwML4jVU6fpOTAo');
  });

  it("scopes a `share: 'caller'` type's key to the caller, and only that type's", () => {
    const input = '{"password":"hunter2"}';
    const caller = { name: 'secret', version: 1, share: 'caller' as const };
    expect(contentKey(caller, input, 'key:alice')).not.toBe(contentKey(caller, input, 'key:bob'));
    expect(contentKey(caller, input, 'key:alice')).toBe(contentKey(caller, input, 'key:alice'));
    expect(contentKey(caller, input, 'key:alice')).not.toContain('alice');
    expect(contentKey({ name: 'a', version: 1 }, '{"n":5}', 'key:alice')).toBe(contentKey({ name: 'a', version: 1 }, '{"n":5}', 'key:bob'));
  });

  it('writes canonical JSON recursively and keeps array order', () => {
    expect(canonicalJson({ b: [3, { d: 1, c: 2 }], a: null })).toBe('{"a":null,"b":[3,{"c":2,"d":1}]}');
  });
});

describe('JobRegistry', () => {
  it('refuses a doubled job type', () => {
    expect(() => new JobRegistry([plain, plain])).toThrow(/registered twice/);
  });

  it('refuses an empty registry and a type without run', () => {
    expect(() => new JobRegistry([])).toThrow(/no job types/);
    expect(() => new JobRegistry([{ ...plain, run: undefined } as never])).toThrow(/no run function/);
  });

  it('registers chaos only when asked', () => {
    expect(JobRegistry.forConfig({ chaosJobs: false }).get('chaos')).toBeUndefined();
    expect(JobRegistry.forConfig({ chaosJobs: true }).get('chaos')).toBeDefined();
    expect(new JobRegistry(allJobs).list()).toHaveLength(allJobs.length);
  });

  it('defineJob validates the declaration', () => {
    expect(() => defineJob({ ...base, input: z.object({}), name: 'Bad Name' })).toThrow(/name must match/);
    expect(() => defineJob({ ...base, input: z.object({}), name: 'ok', version: 0 })).toThrow(/version/);
    expect(defineJob({ ...base, input: z.object({}), name: 'ok' }).retry).toEqual({ attempts: 3, backoffMs: 1000 });
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

  it('retry only what could pass on another attempt: a throw or a crashed thread', () => {
    expect(Object.values(JobFailureCode).filter(isRetried)).toEqual(['JOB_FAILED', 'JOB_CRASHED']);
  });
});
