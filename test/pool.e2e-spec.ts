import { join } from 'node:path';
import type { Config } from '@app/config';
import type { JobPool as JobPoolClass } from '../apps/worker/src/pool/job-pool';

// The built pool: piscina loads the compiled thread entry (dist/.../thread.js) next to it.
const { JobPool } = require(join(__dirname, '..', 'dist', 'apps', 'worker', 'src', 'pool', 'job-pool')) as {
  JobPool: typeof JobPoolClass;
};

const config = { workerThreads: 1, workerNice: 0, workerMaxMemoryMb: 16 } as Config;
const logger = { error: () => undefined } as never;
const run = (pool: JobPoolClass, name: string, inputJson: string, onProgress: (p: number) => void = () => undefined) =>
  pool.run(name, 1, inputJson, { attempt: 1, signal: new AbortController().signal, onProgress }).then(({ value }) => value);

/** The worker's piscina pool on its own, with a deliberately small thread heap. */
describe('JobPool', () => {
  let pool: JobPoolClass;

  beforeAll(() => {
    pool = new JobPool(config, logger);
  });
  afterAll(() => pool.onApplicationShutdown());

  it('delivers progress from the thread while a job runs', async () => {
    const reports: number[] = [];
    const result = await run(pool, 'chaos', '{"mode":"spin","ms":600}', (p) => reports.push(p));
    expect(result).toMatchObject({ mode: 'spin', attempt: 1 });
    expect(reports.length).toBeGreaterThanOrEqual(3);
  });

  it('runs tens of thousands of jobs in a 16 MB thread heap without running out of memory', async () => {
    // A MessagePort per job (the first design) was kept alive inside the thread: ~20k jobs exhausted it.
    for (let i = 1; i <= 30_000; i++) await run(pool, 'fibonacci', `{"n":${i % 20}}`);
    expect(await run(pool, 'fibonacci', '{"n":10}')).toBe(55);
  }, 120_000);

  it('names the content key of the input as the thread validated it, whatever the caller says it is', async () => {
    const { key } = await pool.run('fibonacci', 1, '{"n":10}', { attempt: 1, signal: new AbortController().signal, onProgress: () => undefined });
    const { contentKey } = require(join(__dirname, '..', 'dist', 'libs', 'jobs', 'src', 'content-key')) as typeof import('../libs/jobs/src/content-key');
    expect(key).toBe(contentKey({ name: 'fibonacci', version: 1 }, '{"n":10}'));
    const scoped = await pool.run('private-echo', 1, '{"text":"p","n":1}', { attempt: 1, scope: 'key:alice', signal: new AbortController().signal, onProgress: () => undefined });
    expect(scoped.key).toBe(contentKey({ name: 'private-echo', version: 1, share: 'caller' }, '{"choice":"a","n":1,"text":"p"}', 'key:alice'));
  });

  describe('an inline type, on this event loop', () => {
    const runInline = (inputJson: string, signal = new AbortController().signal, onProgress: (p: number) => void = () => undefined) =>
      pool.run('inline-echo', 1, inputJson, { attempt: 1, signal, onProgress, inline: { timeoutMs: 50 } });

    it('runs on the main thread, with its progress and its key as a thread gives them', async () => {
      const reports: number[] = [];
      const { value, key } = await runInline('{"n":7}', undefined, (p) => reports.push(p));
      expect(value).toEqual({ n: 7, mainThread: true });
      expect(reports).toEqual([100]);
      const { contentKey } = require(join(__dirname, '..', 'dist', 'libs', 'jobs', 'src', 'content-key')) as typeof import('../libs/jobs/src/content-key');
      expect(key).toBe(contentKey({ name: 'inline-echo', version: 1 }, '{"n":7,"spinMs":0,"waitMs":0}'));
      // The same type on a thread, for comparison: the pool's own path.
      expect(await run(pool, 'inline-echo', '{"n":7}')).toEqual({ n: 7, mainThread: false });
    });

    it('fails a run longer than its timeout once it returns, and one whose signal is already aborted before it starts', async () => {
      await expect(runInline('{"n":1,"spinMs":80}')).rejects.toMatchObject({ code: 'JOB_TIMEOUT', message: expect.stringMatching(/ran \d+ ms on the worker's event loop, longer than its 50 ms/) });
      const cancelled = new AbortController();
      cancelled.abort(new Error('cancelled before it started'));
      await expect(runInline('{"n":1}', cancelled.signal)).rejects.toThrow('cancelled before it started');
      // Invalid input is refused as on a thread: JOB_REJECTED, not retried.
      await expect(runInline('{"n":0}')).rejects.toMatchObject({ code: 'JOB_REJECTED' });
    });
  });
});
