import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { JobsClient, type JobEvent, type JobName, type JobRef, type JobTypeInfo, type JobView, ProblemError } from '@app/client';
import { AppEnv, AppProcess, startApp, stackEnv } from './support/apps';
import { waitFor } from './support/wait';

/** The typed client (libs/client) against the built API and worker. */

const KEY_LIMITED = randomBytes(32).toString('hex');
const KEY_OTHER = randomBytes(32).toString('hex');

/** The global fetch, with each call's status and start and end times written down. */
function watchedFetch() {
  const calls: Array<{ method: string; status: number; startedAt: number; endedAt: number }> = [];
  const watched: typeof fetch = async (input, init) => {
    const startedAt = Date.now();
    const res = await fetch(input, init);
    calls.push({ method: init?.method ?? 'GET', status: res.status, startedAt, endedAt: Date.now() });
    return res;
  };
  return { calls, fetch: watched };
}

async function problemOf(promise: Promise<unknown>): Promise<ProblemError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ProblemError);
  return error as ProblemError;
}

const VIEW_FIELDS = ['id', 'type', 'status', 'progress', 'result', 'error', 'cached', 'attempts', 'createdAt', 'startedAt', 'finishedAt'];
const TYPE_FIELDS: Array<keyof JobTypeInfo> = [
  'type', 'version', 'runsVersions', 'description', 'queue', 'priority', 'inputSchema', 'outputSchema', 'examples', 'timeoutMs', 'cacheTtlSeconds', 'startWithinMs', 'maxAttempts',
];

describe('JobsClient', () => {
  const apps: AppProcess[] = [];
  let api: AppProcess;
  /** Keys and a rate limit of 1 request per 2 s, on the first API's Redis prefix, so the worker runs its jobs. */
  let limited: AppProcess;
  /** No worker behind it and MAX_BACKLOG=1: a second waiting job gets 503 BACKLOG_FULL. */
  let full: AppProcess;
  let client: JobsClient;

  beforeAll(async () => {
    const env = stackEnv('client');
    const start = async (kind: 'api' | 'worker', appEnv: AppEnv) => {
      const app = await startApp(kind, appEnv, { waitFor: 'none' });
      apps.push(app);
      return app;
    };
    [api, , limited, full] = await Promise.all([
      start('api', env),
      start('worker', env),
      start('api', { ...env, API_KEYS: `limited=${KEY_LIMITED},other=${KEY_OTHER}`, RATE_LIMIT_PER_MINUTE: '30', RATE_LIMIT_BURST: '1' }),
      start('api', stackEnv('client-full', { MAX_BACKLOG: '1' })),
    ]);
    // why 60 s: four apps starting at once on a busy 2-core host took over 20 s (startApp's own bound).
    await Promise.all(apps.map((app) => app.ready(60_000)));
    client = new JobsClient({ baseUrl: api.url });
  }, 90_000);

  afterAll(async () => {
    await Promise.all(apps.map((app) => app.stop()));
  });

  const until = <N extends JobName>(job: JobRef<N>, status: JobView['status']) =>
    waitFor(async () => {
      const view = await client.get(job);
      return view.status === status ? view : undefined;
    }, { what: `job ${JSON.stringify(job)} ${status}` });

  it('submits a job, then reads it', async () => {
    const submitted = await client.submit('fibonacci', { n: 25 });
    expect(submitted).toMatchObject({ type: 'fibonacci', status: expect.stringMatching(/^(queued|active|completed)$/) });
    const view = await until(submitted, 'completed');
    const result: number | undefined = view.status === 'completed' ? view.result : undefined;
    expect(result).toBe(75025);
    expect(view).toMatchObject({ id: submitted.id, type: 'fibonacci' });
    expect(VIEW_FIELDS).toEqual(expect.arrayContaining(Object.keys(view)));
  });

  it('submits and waits, the result typed by the job type’s output', async () => {
    const fib = await client.submitAndWait('fibonacci', { n: 20 }, { waitSeconds: 20 });
    if (fib.status !== 'completed') throw new Error(`fibonacci ended ${fib.status}`);
    const value: number = fib.result;
    expect(value).toBe(6765);

    // `choice` has a default, so the caller may leave it out; the result, typed by echo's output, has it.
    const echoed = await client.submitAndWait('echo', { numbers: [3, 1, 2] });
    if (echoed.status !== 'completed') throw new Error(`echo ended ${echoed.status}`);
    const choice: 'a' | 'b' | 'c' = echoed.result.choice;
    expect(choice).toBe('a');
    expect(echoed.result).toEqual({ numbers: [3, 1, 2], choice: 'a' });
  });

  it('cancels a long job', async () => {
    const { id } = await client.submit('chaos', { mode: 'sleep', ms: 60_000, tag: 'client-cancel' });
    await until(id, 'active');
    const cancelled = await client.cancel(id);
    expect(['cancelled', 'active']).toContain(cancelled.status);
    const view = await until(id, 'cancelled');
    expect(view.status === 'cancelled' && view.error.code).toBe('JOB_CANCELLED');
    expect(await problemOf(client.cancel(id))).toMatchObject({ status: 409, code: 'JOB_ALREADY_FINISHED' });
  });

  it('streams a job’s events: progress, then the final view', async () => {
    const submitted = await client.submit('chaos', { mode: 'sleep', ms: 1500, tag: 'client-events' });
    const events: Array<JobEvent<'chaos'>> = [];
    for await (const event of client.events(submitted, { timeoutMs: 30_000 })) events.push(event);
    const progress = events.filter((e) => e.event === 'progress').map((e) => e.progress);
    expect(progress.length).toBeGreaterThan(0);
    expect(progress).toEqual([...progress].sort((a, b) => a - b));
    expect(progress.every((p) => p >= 0 && p <= 100)).toBe(true);
    const last = events.at(-1)!;
    if (last.event === 'progress' || last.job.status !== 'completed') throw new Error(`the stream ended with ${JSON.stringify(last)}`);
    expect(last.job.result).toMatchObject({ mode: 'sleep', ms: 1500 });
  });

  it('ends a stream the loop leaves early, and one past its time limit', async () => {
    const { id } = await client.submit('chaos', { mode: 'sleep', ms: 20_000, tag: 'client-events-early' });
    for await (const event of client.events(id)) {
      expect(event.event).toBe('progress');
      break;
    }
    const timedOut = await (async () => {
      for await (const _ of client.events(id, { timeoutMs: 300 }));
    })().catch((e: unknown) => e);
    expect(timedOut).toMatchObject({ name: 'TimeoutError' });
    await client.cancel(id);
  });

  it('sends files as bytes, a Blob or a stream, and downloads the files a job returned', async () => {
    const png = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), randomBytes(30_000)]);
    const bodies = { buffer: png, blob: new Blob([new Uint8Array(png)], { type: 'image/png' }), stream: Readable.from([png.subarray(0, 100), png.subarray(100)]) };
    for (const [how, body] of Object.entries(bodies)) {
      // file-echo (a test type) returns the file it took as `copy.png`, and what its run read of it.
      const view = await client.submitAndWait('file-echo', { label: how }, { files: { file: body }, waitSeconds: 20 });
      if (view.status !== 'completed') throw new Error(`file-echo from a ${how} ended ${view.status}`);
      const { label, bytes }: { label: string; bytes: number } = view.result;
      expect([label, bytes]).toEqual([how, png.length]);
      const [file] = view.files!;
      expect([file.name, file.contentType, file.bytes]).toEqual(['copy.png', 'image/png', png.length]);
      const res = await client.download(file);
      expect(Buffer.from(await res.arrayBuffer()).equals(png)).toBe(true);
    }
    // A file of another type than the declaration takes: a ProblemError, as for any refusal.
    const refused = await problemOf(client.submit('file-echo', { label: 'text' }, { files: { file: Buffer.from('not an image at all') } }));
    expect([refused.status, refused.code]).toEqual([415, 'UNSUPPORTED_MEDIA_TYPE']);
  });

  it('lists the job types', async () => {
    const types = await client.jobTypes();
    const byType = Object.fromEntries(types.map((t) => [t.type, t]));
    expect(byType.fibonacci).toMatchObject({ queue: 'default', version: 1 });
    expect(byType.spin).toMatchObject({ queue: 'heavy' });
    for (const type of types) expect(Object.keys(type).sort()).toEqual([...TYPE_FIELDS].sort());
  });

  it('sends a start deadline, and gets the expired view of a job no worker started in time', async () => {
    // The API without a worker; before the backlog test below fills its one place.
    const idle = new JobsClient({ baseUrl: full.url });
    const view = await idle.submitAndWait('echo', { text: 'client-expires' }, { startWithinSeconds: 0.5, waitSeconds: 10 });
    expect(view.status === 'expired' && view.error.code).toBe('JOB_EXPIRED');
    expect(await problemOf(idle.submit('echo', { text: 'client-expires' }, { startWithinSeconds: 0 }))).toMatchObject({ status: 400, code: 'INVALID_HEADER' });
  });

  it('turns invalid input into a ProblemError naming the field; wrong input types do not compile', async () => {
    // @ts-expect-error: fibonacci's n is a number
    const error = await problemOf(client.submit('fibonacci', { n: 'ten' }));
    expect(error).toMatchObject({ status: 400, code: 'INVALID_INPUT', errors: [expect.objectContaining({ field: 'n' })] });
    expect(error.requestId).toMatch(/.+/);
  });

  it('turns unknown jobs and job types into 404 ProblemErrors', async () => {
    expect(await problemOf(client.get('no-such-job'))).toMatchObject({ status: 404, code: 'JOB_NOT_FOUND' });
    // @ts-expect-error: not a job type
    expect(await problemOf(client.submit('no-such-type', {}))).toMatchObject({ status: 404, code: 'UNKNOWN_JOB_TYPE' });
  });

  it('gives up when a call runs past its time limit', async () => {
    const slow = client.submitAndWait('chaos', { mode: 'sleep', ms: 3000, tag: 'client-timeout' }, { waitSeconds: 10, timeoutMs: 300 });
    await expect(slow).rejects.toMatchObject({ name: 'TimeoutError' });
  });

  it('sends the API key', async () => {
    const anonymous = new JobsClient({ baseUrl: limited.url, retries: 0 });
    expect(await problemOf(anonymous.jobTypes())).toMatchObject({ status: 401, code: 'UNAUTHORIZED' });
    const keyed = new JobsClient({ baseUrl: limited.url, apiKey: KEY_OTHER });
    expect((await keyed.jobTypes()).length).toBeGreaterThan(0);
  });

  it('retries a 429 after its Retry-After, a submission too, and gives up when out of attempts', async () => {
    const watched = watchedFetch();
    const keyed = new JobsClient({ baseUrl: limited.url, apiKey: KEY_LIMITED, fetch: watched.fetch });
    await keyed.jobTypes();
    // 1 request per 2 s, no burst: the next call is refused with Retry-After: 2, then retried.
    const view = await keyed.submitAndWait('fibonacci', { n: 21 }, { waitSeconds: 20 });
    expect(view.status === 'completed' && view.result).toBe(10946);
    expect(watched.calls.map((c) => `${c.method} ${c.status}`)).toEqual(['GET 200', 'POST 429', 'POST 200']);
    expect(watched.calls[2].startedAt - watched.calls[1].endedAt).toBeGreaterThanOrEqual(1990);

    const impatient = new JobsClient({ baseUrl: limited.url, apiKey: KEY_LIMITED, retries: 0, fetch: watched.fetch });
    // why one more call first: the POST above was charged when it arrived, and waiting for its job may
    // have taken the 2 s that refill the budget; this one (retried if need be) leaves it empty again.
    await keyed.jobTypes();
    const before = watched.calls.length;
    expect(await problemOf(impatient.jobTypes())).toMatchObject({ status: 429, code: 'RATE_LIMITED', retryAfterSeconds: 2 });
    expect(watched.calls.length - before).toBe(1);
  });

  it('retries a 503 after its Retry-After a bounded number of times, and not when it asks for longer than allowed', async () => {
    const filler = new JobsClient({ baseUrl: full.url, retries: 0 });
    // The backlog is counted at most every 250 ms: submit distinct jobs until one is refused.
    let n = 0;
    const refused = await waitFor(() => filler.submit('fibonacci', { n: n++ }).then(() => undefined, (error: unknown) => error), {
      what: 'a submission refused',
    });
    expect(refused).toMatchObject({ status: 503, code: 'BACKLOG_FULL', retryAfterSeconds: 5 });

    const watched = watchedFetch();
    const patient = new JobsClient({ baseUrl: full.url, retries: 1, fetch: watched.fetch });
    expect(await problemOf(patient.submit('fibonacci', { n: 40 }))).toMatchObject({ status: 503, code: 'BACKLOG_FULL' });
    expect(watched.calls.map((c) => c.status)).toEqual([503, 503]);
    expect(watched.calls[1].startedAt - watched.calls[0].endedAt).toBeGreaterThanOrEqual(4990);

    const hurried = new JobsClient({ baseUrl: full.url, maxRetryDelayMs: 1000, fetch: watched.fetch });
    expect(await problemOf(hurried.submit('fibonacci', { n: 41 }))).toMatchObject({ status: 503, retryAfterSeconds: 5 });
    expect(watched.calls).toHaveLength(3);
  });

  it('is shown in docs/api.md by an example that compiles (npm run lint compiles test/client-example.ts)', () => {
    const example = readFileSync(join(__dirname, 'client-example.ts'), 'utf8').replace(/^\/\/.*\n/gm, '');
    expect(readFileSync(join(__dirname, '..', 'docs', 'api.md'), 'utf8')).toContain(`\`\`\`ts\n${example}\`\`\``);
  });

  it('loads neither zod nor job code at run time', () => {
    const loaded = execFileSync(
      process.execPath,
      ['-e', "require('./dist/libs/client/src'); console.log(JSON.stringify(Object.keys(require.cache)))"],
      { cwd: join(__dirname, '..'), encoding: 'utf8' },
    );
    const files = JSON.parse(loaded) as string[];
    expect(files.some((f) => f.includes('/libs/client/'))).toBe(true);
    expect(files.filter((f) => /node_modules\/zod\/|libs\/jobs\//.test(f))).toEqual([]);
  });
});
