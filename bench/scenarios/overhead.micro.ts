import { join } from 'node:path';
import { MessageChannel } from 'node:worker_threads';
import type IORedis from 'ioredis';
import Piscina from 'piscina';
import { contentKey } from '../../libs/jobs/src/content-key';
import { sum } from '../../libs/jobs/src/sum.job';
import { closedLoop, HttpClient } from '../load/http-client';
import { summarize } from '../support/stats';

export interface MicroTimings {
  /** zod validation + content hash of a `sum` body, µs. */
  validateHashUs: number;
  /** Redis PING round trip, ms (p50). */
  redisPingMs: number;
  /** HTTP round trip of a trivial route on the API, ms (p50). */
  httpMs: number;
  /** A do-nothing piscina task with a MessagePort travelling along, as in JobPool.run, ms (p50). */
  threadHopMs: number;
}

/** The pieces of a job's path that its timestamps cannot separate, each timed on its own. */
export async function microTimings(redis: IORedis, api: HttpClient): Promise<MicroTimings> {
  const n = 5000;
  let t0 = performance.now();
  for (let i = 0; i < n; i++) contentKey(sum, sum.input.parse({ n: 1_000_000 + i }));
  const validateHashUs = ((performance.now() - t0) / n) * 1000;

  const pings: number[] = [];
  for (let i = 0; i < 200; i++) {
    t0 = performance.now();
    await redis.ping();
    pings.push(performance.now() - t0);
  }
  const http = await closedLoop({ concurrency: 1, total: 200, task: () => api.send('GET', '/health/live') });

  const pool = new Piscina({ filename: join(__dirname, '..', 'baselines', 'hop.thread.js'), minThreads: 1, maxThreads: 1 });
  const hops: number[] = [];
  try {
    for (let i = 0; i < 300; i++) {
      const { port1, port2 } = new MessageChannel();
      port1.on('message', () => undefined);
      t0 = performance.now();
      await pool.run({ value: i, progress: port2 }, { transferList: [port2] });
      hops.push(performance.now() - t0);
      port1.close();
    }
  } finally {
    await pool.destroy();
  }
  return { validateHashUs, redisPingMs: summarize(pings).p50, httpMs: summarize(http.latencies).p50, threadHopMs: summarize(hops.slice(50)).p50 };
}
