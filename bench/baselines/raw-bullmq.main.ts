import { createServer } from 'node:http';
import { Worker } from 'bullmq';
import IORedis from 'ioredis';
import { benchJobs } from '../support/bench-jobs';
import { RAW_QUEUE } from './baseline.tokens';
import { noProgress } from './no-progress';

/**
 * Raw BullMQ's consumer: a plain Worker whose processor runs the same trivial job (bench-sum) inline, with
 * the template worker's concurrency. Env: REDIS_URL, REDIS_PREFIX, CONCURRENCY, PORT (readiness only).
 */
async function main(): Promise<void> {
  const connection = new IORedis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: null });
  const worker = new Worker<{ input: { from: number; to: number } }>(RAW_QUEUE, async (job) => benchJobs.sum.run(job.data.input, noProgress), {
    connection,
    prefix: process.env.REDIS_PREFIX ?? 'raw',
    concurrency: Number(process.env.CONCURRENCY ?? 2),
  });
  worker.on('error', (error) => console.error('worker error', error));
  await worker.waitUntilReady();
  const server = createServer((req, res) => {
    const ok = req.url?.startsWith('/health/') && worker.isRunning();
    res.writeHead(ok ? 200 : 503, { 'content-type': 'application/json' }).end(JSON.stringify({ status: ok ? 'ok' : 'unavailable' }));
  });
  server.listen(Number(process.env.PORT ?? 0), process.env.HOST ?? '127.0.0.1');
  const stop = async () => {
    server.close();
    await worker.close();
    await connection.quit().catch(() => undefined);
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop());
  process.once('SIGINT', () => void stop());
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
