import { z } from 'zod';
import { defineFanOut, MAX_CHUNKS } from './define-fan-out';
import { DEFAULT_QUEUE, defineJob, INLINE_MAX_TIMEOUT_MS, knownVersions, MAX_START_WITHIN_MS, previousVersion, runnerOf, SILENT_LOG } from './define-job';
import { JobRegistry } from './registry';

const ctx = { attempt: 1, progress: () => undefined, log: SILENT_LOG };
const base = { version: 3, description: '', input: z.strictObject({ n: z.int() }), output: z.unknown(), timeoutMs: 1, cacheTtlSeconds: 0 };

describe('defineJob: queues, priorities and versions', () => {
  it('puts types that name no queue in the default queue', () => {
    expect(defineJob({ ...base, name: 'a', run: () => 1 }).queue).toBe(DEFAULT_QUEUE);
    expect(defineJob({ ...base, name: 'a', queue: 'heavy', priority: 5, run: () => 1 })).toMatchObject({ queue: 'heavy', priority: 5 });
  });

  it('refuses bad queue names, priorities and previous versions', () => {
    const run = () => 1;
    expect(() => defineJob({ ...base, name: 'a', queue: 'Heavy', run })).toThrow(/queue must match/);
    expect(() => defineJob({ ...base, name: 'a', queue: 'a:b', run })).toThrow(/queue must match/);
    expect(() => defineJob({ ...base, name: 'a', priority: 0, run })).toThrow(/priority/);
    expect(() => defineJob({ ...base, name: 'a', priority: 2 ** 21 + 1, run })).toThrow(/priority/);
    expect(() => defineJob({ ...base, name: 'a', previousVersions: [{ version: 3 }], run })).toThrow(/below version/);
    expect(() => defineJob({ ...base, name: 'a', previousVersions: [{ version: 1 }, { version: 1 }], run })).toThrow(/repeat/);
    expect(() => defineJob({ ...base, name: 'a', previousVersions: [{ version: 1, input: z.null() }], run })).toThrow(/both input and run/);
  });

  it('keeps a start deadline of 1 ms to a week, and refuses any other', () => {
    const run = () => 1;
    expect(defineJob({ ...base, name: 'a', run }).startWithinMs).toBeUndefined();
    expect(defineJob({ ...base, name: 'a', startWithinMs: 30_000, run }).startWithinMs).toBe(30_000);
    for (const startWithinMs of [0, -1, 1.5, MAX_START_WITHIN_MS + 1]) {
      expect(() => defineJob({ ...base, name: 'a', startWithinMs, run })).toThrow(/startWithinMs must be an integer/);
    }
  });

  it('runs on a pool thread unless declared inline, and takes an inline type only with a timeout of at most INLINE_MAX_TIMEOUT_MS', () => {
    const run = () => 1;
    expect(defineJob({ ...base, name: 'a', run }).inline).toBe(false);
    expect(defineJob({ ...base, name: 'a', inline: true, timeoutMs: INLINE_MAX_TIMEOUT_MS, run }).inline).toBe(true);
    expect(() => defineJob({ ...base, name: 'a', inline: true, timeoutMs: INLINE_MAX_TIMEOUT_MS + 1, run })).toThrow(/an inline type's timeoutMs must be at most 100/);
    expect(() => defineJob({ ...base, name: 'a', timeoutMs: INLINE_MAX_TIMEOUT_MS + 1, run })).not.toThrow();
  });

  it('keeps examples that match the input schema and refuses one that does not, naming it', () => {
    expect(defineJob({ ...base, name: 'a', examples: [{ n: 1 }, { n: 2 }], run: () => 1 }).examples).toEqual([{ n: 1 }, { n: 2 }]);
    expect(defineJob({ ...base, name: 'a', run: () => 1 }).examples).toEqual([]);
    expect(() => defineJob({ ...base, name: 'a', examples: [{ n: 1 }, { n: 'two' } as never], run: () => 1 })).toThrow(/examples\[1\] does not match input: n /);
  });

  it('runs each known version with its own code and schema, and knows no other', async () => {
    const def = defineJob({
      ...base,
      name: 'a',
      previousVersions: [previousVersion({ version: 1, input: z.strictObject({ m: z.int() }), run: ({ m }) => `v1:${m}` }), { version: 2 }],
      run: ({ n }) => `v3:${n}`,
    });
    expect(knownVersions(def)).toEqual([3, 2, 1]);
    const [v3, v2, v1] = [3, 2, 1].map((v) => runnerOf(def, v)!);
    expect(await v3.run(v3.input.parse({ n: 7 }), ctx)).toBe('v3:7');
    // v2 declared compatible: the current schema and code take its jobs.
    expect(await v2.run(v2.input.parse({ n: 8 }), ctx)).toBe('v3:8');
    expect(await v1.run(v1.input.parse({ m: 9 }), ctx)).toBe('v1:9');
    expect(v1.input.safeParse({ n: 9 }).success).toBe(false);
    expect(runnerOf(def, 4)).toBeUndefined();
    expect(runnerOf(def, 0)).toBeUndefined();
  });
});

describe('defineJob: files', () => {
  it('keeps the declared files, frozen, and says which types need a blob store', () => {
    const thumb = defineJob({ ...base, name: 'thumb', files: { image: { maxBytes: 1024, accept: ['image/png', 'image/avif'] } }, returnsFiles: true, run: () => 1 });
    expect(thumb.files).toEqual({ image: { maxBytes: 1024, accept: ['image/png', 'image/avif'] } });
    expect(Object.isFrozen(thumb.files.image.accept)).toBe(true);
    const plain = defineJob({ ...base, name: 'plain', run: () => 1 });
    expect([plain.files, plain.returnsFiles]).toEqual([{}, false]);
    const writer = defineJob({ ...base, name: 'writer', returnsFiles: true, run: () => 1 });
    expect(new JobRegistry([thumb, plain, writer]).fileTypes()).toEqual(['thumb', 'writer']);
  });

  it('refuses bad file names, sizes and types, and files on an inline type', () => {
    const declare = (files: Record<string, { maxBytes: number; accept: never[] | string[] }>, inline = false) => () =>
      defineJob({ ...base, name: 'f', files: files as never, inline, run: () => 1 });
    expect(declare({ input: { maxBytes: 1, accept: ['image/png'] } })).toThrow('file "input": file names must match');
    expect(declare({ 'Bad-Name': { maxBytes: 1, accept: ['image/png'] } })).toThrow('file names must match');
    expect(declare({ image: { maxBytes: 0, accept: ['image/png'] } })).toThrow('maxBytes must be an integer from 1 to');
    expect(declare({ image: { maxBytes: 1, accept: [] } })).toThrow('accept must list some of image/png');
    expect(declare({ image: { maxBytes: 1, accept: ['text/html'] } })).toThrow('accept must list some of');
    expect(declare({ image: { maxBytes: 1, accept: ['image/png'] } }, true)).toThrow('an inline type takes and returns no files');
  });
});

describe('defineJob: schedules', () => {
  const run = () => 1;
  const input = z.strictObject({ n: z.int().min(1), label: z.string().default('tick') });

  it('keeps each schedule with its input validated, defaults applied', () => {
    const def = defineJob({
      ...base,
      input,
      name: 'a',
      schedules: [
        { name: 'nightly', cron: '0 3 * * *', tz: 'Europe/Paris', input: { n: 1 } },
        { name: 'minutely', everyMs: 60_000, input: { n: 2, label: 'x' } },
      ],
      run,
    });
    expect(def.schedules).toEqual([
      { name: 'nightly', cron: '0 3 * * *', tz: 'Europe/Paris', input: { n: 1, label: 'tick' } },
      { name: 'minutely', everyMs: 60_000, input: { n: 2, label: 'x' } },
    ]);
    expect(Object.isFrozen(def.schedules[0])).toBe(true);
    expect(defineJob({ ...base, name: 'b', run }).schedules).toEqual([]);
  });

  it('refuses a schedule with an invalid input, name, interval or timing, naming the type and schedule', () => {
    const bad = (schedule: object) => () => defineJob({ ...base, input, name: 'typed', schedules: [schedule as never], run });
    expect(bad({ name: 'x', everyMs: 1000, input: { n: 0 } })).toThrow(/Job type "typed": schedule "x": invalid input \(n: /);
    expect(bad({ name: 'x', everyMs: 1000, input: { n: 1, extra: true } })).toThrow(/schedule "x": invalid input/);
    expect(bad({ name: 'Nightly', everyMs: 1000, input: { n: 1 } })).toThrow(/schedule names must match/);
    expect(bad({ name: 'x', input: { n: 1 } })).toThrow(/needs exactly one of cron and everyMs/);
    expect(bad({ name: 'x', cron: '* * * * *', everyMs: 1000, input: { n: 1 } })).toThrow(/exactly one/);
    expect(bad({ name: 'x', everyMs: 999, input: { n: 1 } })).toThrow(/everyMs must be an integer of at least 1000/);
    expect(bad({ name: 'x', everyMs: 1000, tz: 'UTC', input: { n: 1 } })).toThrow(/tz applies to cron schedules only/);
    expect(() =>
      defineJob({ ...base, input, name: 'a', schedules: [{ name: 'x', everyMs: 1000, input: { n: 1 } }, { name: 'x', everyMs: 2000, input: { n: 1 } }], run }),
    ).toThrow(/must not repeat a name/);
  });
});

describe('defineFanOut', () => {
  // why local types: this tests the machinery, which must not depend on an example someone may remove.
  const part = defineJob({
    ...base,
    name: 'part',
    queue: 'side',
    input: z.strictObject({ from: z.int(), to: z.int() }),
    output: z.int(),
    run: ({ from, to }) => (to * (to + 1) - (from - 1) * from) / 2,
  });
  const halves = defineFanOut({
    ...base,
    name: 'halves',
    output: z.int(),
    child: part,
    split: ({ n }) => [{ from: 1, to: Math.floor(n / 2) }, { from: Math.floor(n / 2) + 1, to: n }],
    merge: (sums) => sums.reduce((total, sum) => total + sum, 0),
  });

  it("goes to its child type's queue, and its run gives the same result as the chunks merged", async () => {
    expect(halves.queue).toBe('side');
    expect(halves.fanOut!.child).toBe(part);
    const input = halves.input.parse({ n: 1001 });
    const parts = halves.fanOut!.split(input).map((chunk) => part.run(part.input.parse(chunk), ctx));
    expect(parts).toEqual([125_250, 376_251]);
    expect(halves.fanOut!.merge(parts, input)).toBe(501_501);
    expect(await halves.run(input, ctx)).toBe(501_501);
  });

  it('refuses a split into no chunks or too many', () => {
    const fan = defineFanOut({ ...base, name: 'fan', child: part, split: ({ n }) => Array.from({ length: n }, () => ({ from: 1, to: 1 })), merge: () => 0 });
    expect(() => fan.fanOut!.split({ n: 0 })).toThrow(/0 chunks/);
    expect(() => fan.fanOut!.split({ n: MAX_CHUNKS + 1 })).toThrow(/1 to 1000/);
  });

  it('registers only with its child type', () => {
    expect(() => new JobRegistry([halves])).toThrow(/fans out to "part", which is not registered/);
    expect(new JobRegistry([halves, part]).queues()).toEqual(['side']);
    // Workers may also consume the deployed queues, which no type here uses.
    expect(new JobRegistry([halves, part]).workerQueues()).toEqual(['default', 'heavy', 'side']);
  });
});
