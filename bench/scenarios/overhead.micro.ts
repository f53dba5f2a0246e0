import { join } from 'node:path';
import type IORedis from 'ioredis';
import Piscina from 'piscina';
import { canonicalJson, contentKey } from '../../libs/jobs/src/content-key';
import { closedLoop, HttpClient } from '../load/http-client';
import { benchJobs } from '../support/bench-jobs';
import { summarize } from '../support/stats';

export interface MicroTimings {
  /** zod validation + content hash of a bench-sum body, µs. */
  validateHashUs: number;
  /** Redis PING round trip, ms (p50). */
  redisPingMs: number;
  /** HTTP round trip of a trivial route on the API, ms (p50). */
  httpMs: number;
  /** A do-nothing piscina task shaped like JobPool.run's (ids and input JSON, no ports), ms (p50). */
  threadHopMs: number;
}

/** The pieces of a job's path that its timestamps cannot separate, each timed on its own. */
export async function microTimings(redis: IORedis, api: HttpClient): Promise<MicroTimings> {
  const n = 5000;
  let t0 = performance.now();
  const { sum } = benchJobs;
  for (let i = 0; i < n; i++) contentKey(sum, canonicalJson(sum.input.parse({ from: 1_000_000 + i, to: 1_000_009 + i })));
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
      t0 = performance.now();
      await pool.run({ taskId: i, name: 'hop', inputJson: `{"n":${i}}`, attempt: 1 });
      hops.push(performance.now() - t0);
    }
  } finally {
    await pool.destroy();
  }
  return { validateHashUs, redisPingMs: summarize(pings).p50, httpMs: summarize(http.latencies).p50, threadHopMs: summarize(hops.slice(50)).p50 };
}
