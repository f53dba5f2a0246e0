import { Queue } from 'bullmq';
import { METRIC_PREFIX } from '@app/metrics';
import { queuePrefix } from '@app/queue';
import { AppProcess, AppEnv, startStack, stackEnv } from './support/apps';
import { getJob, request, submit } from './support/http';
import { waitFor } from './support/wait';

/** One bad job fails only itself, with a clear code; the pool replaces its thread and keeps serving. */
describe('job faults', () => {
  let api: AppProcess;
  let worker: AppProcess;
  let stop: () => Promise<void>;
  // why 3 s: the leaking job's thread reaches its 64 MB through V8's last-resort collections, which took
  // over 1.5 s beside the other lane on 2 cores, and it then ended as JOB_TIMEOUT instead.
  const env: AppEnv = stackEnv('faults', { WORKER_THREADS: '2', JOB_TIMEOUT_MS: '3000', WORKER_MAX_MEMORY_MB: '64' });

  beforeAll(async () => {
    ({ api, worker, stop } = await startStack(env));
  });
  afterAll(() => stop());

  const expectHealthy = async () => {
    expect((await request(`${worker.url}/health/ready`)).status).toBe(200);
    const ok = await submit(api.url, 'fibonacci', { n: 15 + Math.floor(Math.random() * 10) }, { wait: 10 });
    expect(ok.body.status).toBe('completed');
  };

  it('times out a job that runs forever, while other jobs keep flowing', async () => {
    const hang = submit(api.url, 'chaos', { mode: 'hang', tag: 'timeout' }, { wait: 15 });
    const meanwhile = await submit(api.url, 'fibonacci', { n: 24 }, { wait: 10 });
    expect(meanwhile.body).toMatchObject({ status: 'completed', result: 46368 });
    const res = await hang;
    expect(res.body).toMatchObject({ status: 'failed', attempts: 1, error: { code: 'JOB_TIMEOUT' } });
    await expectHealthy();
  });

  it('times out a real job type past JOB_TIMEOUT_MS (fibonacci(50))', async () => {
    const res = await submit(api.url, 'fibonacci', { n: 50 }, { wait: 15 });
    expect(res.body).toMatchObject({ status: 'failed', error: { code: 'JOB_TIMEOUT' } });
    await expectHealthy();
  });

  it('fails a job whose thread exits with JOB_CRASHED after its retries', async () => {
    const res = await submit(api.url, 'chaos', { mode: 'exit', tag: 'crash' }, { wait: 15 });
    expect(res.body).toMatchObject({ status: 'failed', attempts: 2, error: { code: 'JOB_CRASHED' } });
    await expectHealthy();
  });

  it('fails a job that exhausts its thread heap with JOB_OUT_OF_MEMORY, without retrying', async () => {
    const res = await submit(api.url, 'chaos', { mode: 'leak', tag: 'oom' }, { wait: 20 });
    expect(res.body).toMatchObject({ status: 'failed', attempts: 1, error: { code: 'JOB_OUT_OF_MEMORY' } });
    await expectHealthy();
  });

  it('retries a transient failure with backoff and then succeeds', async () => {
    const res = await submit(api.url, 'chaos', { mode: 'flaky', tag: 'retry' }, { wait: 15 });
    expect(res.body).toMatchObject({ status: 'completed', attempts: 2, result: { attempt: 2 } });
  });

  it('rejects a job whose type, version or input this worker cannot run, without retrying', async () => {
    // What an API of a newer release could enqueue during a rolling deploy, once no newer worker
    // came for it within the grace period (the job is older than that).
    const queue = new Queue('default', { connection: { url: env.REDIS_URL }, prefix: queuePrefix(env.REDIS_PREFIX!, 'default') });
    try {
      const ids = ['3f1c1d9e-0000-4000-8000-000000000001', '3f1c1d9e-0000-4000-8000-000000000002', '3f1c1d9e-0000-4000-8000-000000000003'];
      const longAgo = Date.now() - 10 * 60_000;
      await queue.add('fibonacci', { inputJson: '{"n":5}', version: 99, key: 'fibonacci:v99:x' }, { jobId: ids[0], attempts: 3, timestamp: longAgo });
      await queue.add('primes', { inputJson: '{}', version: 1, key: 'primes:v1:x' }, { jobId: ids[1], attempts: 3 });
      // Input that bypassed the API's validation (a script, an older API) is rejected by the thread.
      await queue.add('fibonacci', { inputJson: '{"n":"fifty"}', version: 1, key: 'fibonacci:v1:y' }, { jobId: ids[2], attempts: 3 });
      for (const id of ids) {
        const view = await waitFor(async () => {
          const { body } = await getJob(api.url, id);
          return body.status === 'failed' && body;
        }, { what: `job ${id} rejected` });
        expect(view).toMatchObject({ attempts: 1, error: { code: 'JOB_REJECTED' } });
      }
      expect(await worker.metric(`${METRIC_PREFIX}jobs_finished_total`, { outcome: 'JOB_REJECTED' })).toBe(3);
    } finally {
      await queue.close();
    }
  });

  it('puts a fresh job of a newer version back for a newer worker instead of failing it', async () => {
    const queue = new Queue('default', { connection: { url: env.REDIS_URL }, prefix: queuePrefix(env.REDIS_PREFIX!, 'default') });
    try {
      const id = '3f1c1d9e-0000-4000-8000-000000000004';
      await queue.add('fibonacci', { inputJson: '{"n":6}', version: 2, key: 'fibonacci:v2:x' }, { jobId: id, attempts: 3 });
      await waitFor(async () => (await queue.getJob(id))?.attemptsStarted! >= 2, { what: 'the worker to see it twice', timeoutMs: 15_000 });
      const job = (await queue.getJob(id))!;
      expect(['delayed', 'waiting', 'active']).toContain(await job.getState());
      expect(job.attemptsMade).toBe(0);
      expect((await getJob(api.url, id)).body).toMatchObject({ status: expect.stringMatching(/queued|active/) });
      await queue.remove(id);
    } finally {
      await queue.close();
    }
  });

  it('keeps the worker process alive throughout', () => {
    expect(worker.alive).toBe(true);
    expect(worker.logs.filter((l) => l.level >= 50)).toEqual([]);
  });
});
