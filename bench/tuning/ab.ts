import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { AppProcess } from '../../test/support/apps';
import { OtlpReceiver } from '../../test/support/otlp-receiver';
import { BENCH_KEY_ENV } from '../load/api-key';
import { blast } from '../load/blast';
import { closedLoop, HttpClient } from '../load/http-client';
import { nextTrivial, rotate } from '../scenarios/context';
import { Progress } from '../support/progress';
import { cpuMs, Env, startRedis, startTemplate } from '../support/stack';
import { Rounds, summarize } from '../support/stats';

/**
 * A/B of two template builds or settings, side by side in one run (this host is too noisy to compare
 * separate runs): two stacks on one Redis, short measurements alternating between them, and the
 * median of the per-round ratios B ÷ A.
 *
 *   AB_DIST_A / AB_DIST_B   builds to compare (default: ./dist for both)
 *   AB_ENV_A / AB_ENV_B     extra env, "NAME=value,NAME=value" (e.g. WORKER_NICE=0; both sides run with the
 *                           bench's API key, and "API_KEYS=,ALLOW_UNAUTHENTICATED=true" runs one without)
 *   AB_ROUNDS (8), AB_SECONDS (1.5), AB_MEASURES (cacheHit,trivialJobs,sequential,trivialRoute)
 *   AB_TRIVIAL_TYPE         the trivial job of trivialJobs and sequential (bench-sum; bench-sum-inline)
 *   AB_NODE_ARGS            Node flags for both sides' apps ("--cpu-prof --cpu-prof-dir=/tmp/prof")
 *   AB_NODE_ARGS_A / _B     Node flags for one side's apps, after the image's and AB_NODE_ARGS
 *
 * Besides each measure (req/s, jobs/s or p50 ms), it reports the CPU time the API and the worker
 * spent per request or job (from /proc), which a busy host disturbs less than throughput.
 *
 * `$OTLP_SINK` in an AB_ENV value becomes the URL of an OTLP/HTTP receiver started here, which
 * takes and counts spans like a collector would: tracing on vs off is
 *   AB_ENV_B='OTEL_EXPORTER_OTLP_ENDPOINT=$OTLP_SINK'
 * (trivialJobs and sequential are the per-job bench's two measures: bench/scenarios/overhead.ts).
 */
function envOf(value: string | undefined): Env {
  return Object.fromEntries((value ?? '').split(',').filter(Boolean).map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]));
}

/** A measure's value, and how many requests or jobs it completed (for CPU per unit). */
type Measure = (api: AppProcess) => Promise<{ value: number; units: number }>;

async function main(): Promise<void> {
  const root = process.env.BENCH_ROOT ?? process.cwd();
  const rounds = Number(process.env.AB_ROUNDS ?? 8);
  const seconds = Number(process.env.AB_SECONDS ?? 1.5);
  const progress = new Progress();
  const nodeArgs = (process.env.AB_NODE_ARGS ?? '').split(/\s+/).filter(Boolean);
  const redis = await startRedis(process.env.REDIS_URL);
  const stacks: Array<{ api: AppProcess; worker: AppProcess }> = [];
  const sink = [process.env.AB_ENV_A, process.env.AB_ENV_B].some((v) => v?.includes('$OTLP_SINK')) ? await OtlpReceiver.start() : undefined;
  try {
    for (const side of ['A', 'B'] as const) {
      const env: Env = {
        REDIS_URL: redis.url,
        REDIS_PREFIX: `ab-${side}-${randomBytes(3).toString('hex')}`,
        NODE_ENV: 'production',
        // why: as in production, with a key: requests authenticated, jobs' owners recorded (bench/load/api-key.ts).
        ...BENCH_KEY_ENV,
        LOG_LEVEL: 'warn',
        WORKER_THREADS: '2',
        ...envOf(process.env[`AB_ENV_${side}`]?.replaceAll('$OTLP_SINK', sink?.url ?? '')),
      };
      const sideArgs = (process.env[`AB_NODE_ARGS_${side}`] ?? '').split(/\s+/).filter(Boolean);
      stacks.push(await startTemplate(root, env, { dist: process.env[`AB_DIST_${side}`] ?? join(root, 'dist'), nodeArgs: [...nodeArgs, ...sideArgs] }));
    }
    const trivial = `/v1/jobs/${process.env.AB_TRIVIAL_TYPE ?? 'bench-sum'}`;
    const clients = new Map(stacks.map(({ api }) => [api, new HttpClient(api.url, 64)]));
    const client = (api: AppProcess) => clients.get(api)!;
    for (const { api } of stacks) await client(api).json('POST', '/v1/jobs/fibonacci', { json: { n: 25 }, headers: { prefer: 'wait=30' } });

    const measures: Record<string, Measure> = {
      cacheHit: async (api) => {
        const r = await blast({ url: `${api.url}/v1/jobs/fibonacci`, method: 'POST', body: { n: 25 }, connections: 8, durationS: seconds });
        return { value: r.rps, units: r.ok };
      },
      trivialRoute: async (api) => {
        const r = await blast({ url: `${api.url}/health/live`, connections: 8, durationS: seconds });
        return { value: r.rps, units: r.ok };
      },
      trivialJobs: async (api) => {
        const c = client(api);
        const run = await closedLoop({
          concurrency: 32,
          durationMs: seconds * 1000,
          task: () => c.json('POST', trivial, { json: nextTrivial(), headers: { prefer: 'wait=30' } }),
        });
        return { value: run.results.length / (run.elapsedMs / 1000), units: run.results.length };
      },
      sequential: async (api) => {
        const c = client(api);
        const run = await closedLoop({ concurrency: 1, total: 100, task: () => c.json('POST', trivial, { json: nextTrivial(), headers: { prefer: 'wait=30' } }) });
        return { value: summarize(run.latencies).p50, units: run.results.length };
      },
    };
    const chosen = (process.env.AB_MEASURES ?? 'cacheHit,trivialJobs,sequential,trivialRoute').split(',');
    const results = new Rounds();
    for (let r = 0; r < rounds; r++) {
      for (const name of chosen) {
        const values: Record<string, number> = {};
        for (const [i, stack] of rotate([0, 1], r).map((i) => [i, stacks[i]] as const)) {
          const pids = [stack.api.pid, stack.worker.pid];
          const before = pids.map(cpuMs);
          const { value, units } = await measures[name](stack.api);
          const [api, worker] = pids.map((pid, j) => ((cpuMs(pid) - before[j]) * 1000) / units);
          values[i] = value;
          results.add(`${name}.${i ? 'B' : 'A'}`, value);
          results.add(`${name}.cpu.${i ? 'B' : 'A'}`, api + worker);
          results.add(`${name}.apiCpu.${i ? 'B' : 'A'}`, api);
        }
        results.add(`${name}.ratio`, values[1] / values[0]);
      }
      progress.log(`round ${r + 1}/${rounds}: ${chosen.map((n) => `${n} B÷A ${results.get(`${n}.ratio`).values.at(-1)!.toFixed(2)}`).join(', ')}`);
    }
    for (const name of chosen) {
      const [a, b, ratio] = ['A', 'B', 'ratio'].map((s) => results.get(`${name}.${s}`));
      const cpu = (what: string, side: string) => results.get(`${name}.${what}.${side}`).median.toFixed(0).padStart(5);
      console.log(
        `${name.padEnd(13)} A ${a.median.toFixed(2).padStart(8)}  B ${b.median.toFixed(2).padStart(8)}  B÷A ${ratio.median.toFixed(2)} (${ratio.min.toFixed(2)}–${ratio.max.toFixed(2)})` +
          `   CPU µs per unit, API+worker (API): A ${cpu('cpu', 'A')} (${cpu('apiCpu', 'A')})  B ${cpu('cpu', 'B')} (${cpu('apiCpu', 'B')})`,
      );
    }
    for (const c of clients.values()) c.close();
  } finally {
    await Promise.all(stacks.flatMap(({ api, worker }) => [api.stop(), worker.stop()]));
    if (sink) console.log(`OTLP sink: ${sink.spans.length} spans received (${sink.refused.length} requests refused)`);
    await sink?.close();
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
