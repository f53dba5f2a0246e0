import { Agent, request } from 'node:http';
import { BENCH_API_KEY, BENCH_KEY_ENV } from '../load/api-key';
import { startRedis, startTemplate } from '../support/stack';
import { spread } from '../support/stats';

/**
 * Where one caller's submit-and-wait goes, step by step, from the API's own Server-Timing header
 * (validate, cache, enqueue, wait) and the client's round trip: the median over STEPS_JOBS
 * sequential trivial jobs, after 500 to warm up. The rest of the round trip (HTTP in and out, the
 * access check, the client) is what no step names. Uses REDIS_URL or a redis-server of its own.
 *
 *   npx node bench/.build/bench/tuning/steps.js      STEPS_TYPE (bench-sum-inline), STEPS_JOBS (2000), BENCH_DIST
 */
async function main(): Promise<void> {
  const redis = await startRedis(process.env.REDIS_URL);
  const { api, worker } = await startTemplate(process.cwd(), { REDIS_URL: redis.url, REDIS_PREFIX: `steps-${process.pid}`, LOG_LEVEL: 'warn', ...BENCH_KEY_ENV }, { dist: process.env.BENCH_DIST });
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const url = `${api.url}/v1/jobs/${process.env.STEPS_TYPE ?? 'bench-sum-inline'}`;
  let n = 0;
  const submit = () =>
    new Promise<{ ms: number; timing: string }>((resolve, reject) => {
      const from = ++n;
      const started = performance.now();
      const req = request(url, { method: 'POST', agent, headers: { 'content-type': 'application/json', prefer: 'wait=10', 'x-api-key': BENCH_API_KEY } }, (res) => {
        res.resume();
        res.on('end', () => (res.statusCode === 200 ? resolve({ ms: performance.now() - started, timing: String(res.headers['server-timing']) }) : reject(new Error(`HTTP ${res.statusCode}`))));
      });
      req.on('error', reject);
      req.end(JSON.stringify({ from, to: from + 9 }));
    });
  try {
    for (let i = 0; i < 500; i++) await submit();
    const steps = new Map<string, number[]>([['round trip', []]]);
    for (let i = 0, jobs = Number(process.env.STEPS_JOBS ?? 2000); i < jobs; i++) {
      const { ms, timing } = await submit();
      steps.get('round trip')!.push(ms);
      for (const entry of timing.split(', ')) {
        const [name, dur] = entry.split(';dur=');
        if (!steps.has(name)) steps.set(name, []);
        steps.get(name)!.push(Number(dur));
      }
    }
    const medians = [...steps].map(([name, values]) => [name, spread(values).median] as const);
    const named = medians.filter(([name]) => name !== 'round trip').reduce((sum, [, ms]) => sum + ms, 0);
    for (const [name, ms] of medians) console.log(`${name.padEnd(12)} ${ms.toFixed(3)} ms`);
    console.log(`${'unnamed'.padEnd(12)} ${(medians[0][1] - named).toFixed(3)} ms (round trip − the named steps' medians)`);
  } finally {
    agent.destroy();
    await Promise.all([api.stop(), worker.stop()]);
    await redis.stop();
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
