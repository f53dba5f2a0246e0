import { METRIC_PREFIX } from '@app/metrics';
import { childJobId } from '@app/queue';
import { AppProcess, startAll, startApp, stackEnv } from './support/apps';
import { getJob, readEvents, submit } from './support/http';

const triangle = (n: number) => ((BigInt(n) * BigInt(n + 1)) / 2n).toString();

/**
 * The parallel-sum example end to end: 1 + … + n as sum-range chunks on the heavy queue's workers,
 * added up exactly. What fan-out does for any type (progress, cancel, a failing chunk) is
 * test/fan-out.e2e-spec.ts's. Named after the example, so `npm run remove:job -- parallel-sum
 * sum-range` removes it with them.
 */
describe('parallel-sum', () => {
  const env = stackEnv('parallel-sum', { WORKER_THREADS: '1', WORKER_QUEUES: 'heavy' });
  let api: AppProcess;
  let workers: AppProcess[] = [];

  beforeAll(async () => {
    [api, ...workers] = await startAll([startApp('api', env), startApp('worker', env), startApp('worker', env)]);
  });

  afterAll(async () => {
    await Promise.all([api, ...workers].map((p) => p?.stop()));
  });

  it('adds up its sum-range chunks exactly, each a job of its own', async () => {
    // why this n: each chunk's sum (2·10^16) and the total pass 2^53, so exactness is tested, for ~0.2 s of loop a chunk.
    const n = 1_600_000_000;
    const { status, body } = await submit(api.url, 'parallel-sum', { n, chunks: 8 });
    expect(status).toBe(202);
    const events = await readEvents(`${api.url}/v1/jobs/${body.id}/events`, 60_000);
    expect(events.at(-1)).toMatchObject({ event: 'completed', data: { status: 'completed', result: triangle(n) } });
    const perWorker = await Promise.all(workers.map((w) => w.metric(`${METRIC_PREFIX}jobs_finished_total`, { type: 'sum-range', outcome: 'completed' })));
    console.log(`[parallel-sum] 8 chunks of n=${n}: ${perWorker.join(' + ')} per worker`);
    expect(perWorker.reduce((a, b) => a + b, 0)).toBe(8);
    const chunk = await getJob(api.url, childJobId(body.id, 0));
    expect(chunk.body).toMatchObject({ type: 'sum-range', status: 'completed', result: triangle(n / 8) });
  }, 90_000);
});
