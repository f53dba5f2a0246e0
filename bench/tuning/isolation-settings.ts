import { pbkdf2Sync, randomBytes } from 'node:crypto';
import { join } from 'node:path';
import IORedis from 'ioredis';
import type { AppProcess } from '../../test/support/apps';
import { BENCH_KEY_ENV } from '../load/api-key';
import { blast } from '../load/blast';
import { HttpClient } from '../load/http-client';
import { Saturator } from '../load/saturator';
import { fresh, rotate, sleep } from '../scenarios/context';
import { CpuPinning } from '../support/cpu-affinity';
import { Progress } from '../support/progress';
import { Env, readMetric, startRedis, startTemplate } from '../support/stack';
import { Rounds, Spread, spread } from '../support/stats';
import { delta, SchedCounters, schedCounters } from './sched-counters';

/**
 * The pool's scheduling settings side by side in one run: API isolation (GET req/s with CPU jobs in
 * flight ÷ without) and CPU job throughput for each, with the kernel's view of where the API's time
 * went (CPU per GET, time runnable but waiting for a core, context switches) and Redis's CPU.
 *
 *   nice 0              WORKER_SCHED=other WORKER_NICE=0
 *   nice 19             WORKER_SCHED=other WORKER_NICE=19 (the apps' default; the image sets idle)
 *   SCHED_IDLE          WORKER_SCHED=idle
 *   SCHED_IDLE, pinned  the same stack, its API alone on core 0, everything else on core 1
 *
 * Three stacks on one Redis; only the one measured has load. Per setting and round: GETs alone,
 * GETs with 6 callers of ~25 ms jobs, then those jobs alone (their throughput with nothing in the way).
 *   ISO_ROUNDS (3), ISO_SECONDS (4), ISO_CONNECTIONS (10), ISO_CALLERS (6), ISO_JOB_MS (25)
 *
 *   npm run build && npx tsc -p bench/tsconfig.json
 *   flock /work/bench.lock npx node bench/.build/bench/tuning/isolation-settings.js
 */
interface Setting {
  name: string;
  env: Env;
  pinned: boolean;
}

const SETTINGS: Setting[] = [
  { name: 'nice 0', env: { WORKER_SCHED: 'other', WORKER_NICE: '0' }, pinned: false },
  { name: 'nice 19', env: { WORKER_SCHED: 'other', WORKER_NICE: '19' }, pinned: false },
  { name: 'SCHED_IDLE', env: { WORKER_SCHED: 'idle', WORKER_NICE: '19' }, pinned: false },
  { name: 'SCHED_IDLE, API pinned', env: { WORKER_SCHED: 'idle', WORKER_NICE: '19' }, pinned: true },
];
const LOOP_P99 = 'nest_offload_nodejs_eventloop_lag_p99_seconds';

async function main(): Promise<void> {
  const root = process.env.BENCH_ROOT ?? process.cwd();
  const n = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
  const rounds = n('ISO_ROUNDS', 3);
  const seconds = n('ISO_SECONDS', 4);
  const connections = n('ISO_CONNECTIONS', 10);
  const callers = n('ISO_CALLERS', 6);
  const iterations = pbkdf2IterationsFor(n('ISO_JOB_MS', 25));
  const progress = new Progress();
  const redis = await startRedis(undefined);
  const redisClient = new IORedis(redis.url);
  const redisPid = Number(/^process_id:(\d+)/m.exec(await redisClient.info('server'))?.[1]);
  const stacks = new Map<string, { api: AppProcess; worker: AppProcess; jobId: string }>();
  const results = new Rounds();
  try {
    for (const setting of SETTINGS) {
      const key = JSON.stringify(setting.env);
      if (stacks.has(key)) continue;
      const env: Env = {
        REDIS_URL: redis.url,
        REDIS_PREFIX: `iso-${randomBytes(3).toString('hex')}`,
        NODE_ENV: 'production',
        // why: as in production, with a key: requests authenticated, jobs' owners recorded (bench/load/api-key.ts).
        ...BENCH_KEY_ENV,
        LOG_LEVEL: 'warn',
        WORKER_THREADS: '2',
        ...setting.env,
      };
      const { api, worker } = await startTemplate(root, env, { dist: join(root, 'dist') });
      const client = new HttpClient(api.url, 1);
      const reply = await client.json<{ id: string }>('POST', '/v1/jobs/fibonacci', { json: { n: 20 }, headers: { prefer: 'wait=30' } });
      client.close();
      await blast({ url: `${api.url}/v1/jobs/${reply.body!.id}`, connections, durationS: 1 }); // why: measure the GET path warm, not its JIT
      stacks.set(key, { api, worker, jobId: reply.body!.id });
    }

    for (let round = 0; round < rounds; round++) {
      for (const setting of rotate(SETTINGS, round)) {
        const { api, worker, jobId } = stacks.get(JSON.stringify(setting.env))!;
        const pinning = new CpuPinning();
        if (setting.pinned) {
          pinning.pin(api.pid, '0');
          for (const pid of [worker.pid, redisPid, process.pid]) pinning.pin(pid, '1');
          await sleep(100);
        }
        try {
          const pids = { api: api.pid, worker: worker.pid, redis: redisPid };
          const get = { url: `${api.url}/v1/jobs/${jobId}`, connections, durationS: seconds };
          const idle = await counted(pids, () => blast(get));
          const saturator = new Saturator(api.url, callers, () => ({ type: 'bench-pbkdf2', input: { salt: fresh(), iterations } }));
          try {
            while ((await worker.metric('nest_offload_jobs_active')) < 2) await sleep(20);
            await readMetric(api.url, LOOP_P99); // why: reading resets the histogram; the next read covers the busy load only
            const jobs0 = saturator.completed;
            const busy = await counted(pids, () => blast(get));
            const jobs1 = saturator.completed;
            const loopP99 = await readMetric(api.url, LOOP_P99);
            const jobs2 = saturator.completed;
            const lone = await counted(pids, () => sleep(seconds * 1000));
            const aloneJobs = saturator.completed - jobs2;
            const alone = aloneJobs / lone.seconds;
            // The job traffic's own cost, with no GET load: what each job asks of the API, the worker's event loop and Redis.
            results.add(`${setting.name}.apiCpuPerJob`, lone.counters.api.cpuMs / aloneJobs);
            results.add(`${setting.name}.workerCpuPerJob`, lone.counters.worker.cpuMs / aloneJobs);
            results.add(`${setting.name}.redisCpuPerJob`, lone.counters.redis.cpuMs / aloneJobs);
            const k = setting.name;
            results.add(`${k}.ratio`, busy.value.rps / idle.value.rps);
            results.add(`${k}.idleRps`, idle.value.rps);
            results.add(`${k}.busyRps`, busy.value.rps);
            results.add(`${k}.loopP99`, loopP99 * 1000);
            results.add(`${k}.jobsDuringGets`, (jobs1 - jobs0) / seconds);
            results.add(`${k}.jobsAlone`, alone);
            for (const [phase, m] of [['idle', idle], ['busy', busy]] as const) {
              const gets = m.value.ok;
              results.add(`${k}.${phase}.apiCpuPerGet`, (m.counters.api.cpuMs * 1000) / gets);
              results.add(`${k}.${phase}.apiWaitPerS`, m.counters.api.waitMs / m.seconds);
              results.add(`${k}.${phase}.apiWaitPerGet`, (m.counters.api.waitMs * 1000) / gets);
              results.add(`${k}.${phase}.apiVolPerGet`, m.counters.api.voluntary / gets);
              results.add(`${k}.${phase}.apiInvolPerS`, m.counters.api.involuntary / m.seconds);
              results.add(`${k}.${phase}.redisCpuPerS`, m.counters.redis.cpuMs / m.seconds);
              results.add(`${k}.${phase}.redisWaitPerS`, m.counters.redis.waitMs / m.seconds);
              results.add(`${k}.${phase}.workerCpuPerS`, m.counters.worker.cpuMs / m.seconds);
              results.add(`${k}.${phase}.benchCpuPerS`, m.benchCpuMs / m.seconds);
            }
            progress.log(
              `round ${round + 1}/${rounds} ${k}: GET ${idle.value.rps.toFixed(0)} → ${busy.value.rps.toFixed(0)} req/s (${(busy.value.rps / idle.value.rps).toFixed(3)}), ` +
                `loop p99 ${(loopP99 * 1000).toFixed(1)} ms, jobs/s ${((jobs1 - jobs0) / seconds).toFixed(1)} during GETs, ${alone.toFixed(1)} alone`,
            );
          } finally {
            await saturator.stop();
          }
        } finally {
          pinning.restore();
        }
        await sleep(200);
      }
    }
    console.log(report(results, { rounds, seconds, connections, callers }));
  } finally {
    for (const { api, worker } of stacks.values()) await Promise.all([api.stop(), worker.stop()]);
    redisClient.disconnect();
    await redis.stop();
  }
}

/** Runs `task` and returns what it gave, with the kernel's counters of the API, worker and Redis, and this process's CPU. */
async function counted<T>(pids: Record<'api' | 'worker' | 'redis', number>, task: () => Promise<T>) {
  const before = { api: schedCounters(pids.api), worker: schedCounters(pids.worker), redis: schedCounters(pids.redis) };
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const value = await task();
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const counters: Record<'api' | 'worker' | 'redis', SchedCounters> = {
    api: delta(schedCounters(pids.api), before.api),
    worker: delta(schedCounters(pids.worker), before.worker),
    redis: delta(schedCounters(pids.redis), before.redis),
  };
  return { value, seconds, counters, benchCpuMs: (cpu.user + cpu.system) / 1000 };
}

/** pbkdf2-sha512 iterations that take about `ms` on one thread here (the bench's own calibration). */
function pbkdf2IterationsFor(ms: number): number {
  const per: number[] = [];
  for (let i = 0; i < 5; i++) {
    const t0 = performance.now();
    pbkdf2Sync('calibrate', `salt-${i}`, 20_000, 64, 'sha512');
    per.push((performance.now() - t0) / 20_000);
  }
  return Math.max(1000, Math.round(ms / spread(per.slice(1)).median / 1000) * 1000);
}

function report(results: Rounds, o: { rounds: number; seconds: number; connections: number; callers: number }): string {
  const f = (s: Spread, digits = 2) => (s.values.length > 1 ? `${s.median.toFixed(digits)} (${s.min.toFixed(digits)}–${s.max.toFixed(digits)})` : s.median.toFixed(digits));
  const r = (k: string) => results.get(k);
  const pair = (k: string, what: string, digits = 1) => `${r(`${k}.idle.${what}`).median.toFixed(digits)} → ${r(`${k}.busy.${what}`).median.toFixed(digits)}`;
  const lines = [
    `Isolation settings: ${o.rounds} alternating rounds; GET /v1/jobs/{id} ${o.seconds} s × ${o.connections} connections, alone then with ${o.callers} callers of ~25 ms jobs; median (min–max).`,
    '',
    '| Setting | GET busy ÷ idle | GET req/s idle → busy | API loop p99 busy, ms | CPU jobs/s during GETs | CPU jobs/s alone |',
    '|---|---|---|---|---|---|',
    ...SETTINGS.map(({ name: k }) =>
      `| ${k} | ${f(r(`${k}.ratio`), 3)} | ${r(`${k}.idleRps`).median.toFixed(0)} → ${r(`${k}.busyRps`).median.toFixed(0)} | ${f(r(`${k}.loopP99`), 1)} | ${f(r(`${k}.jobsDuringGets`), 1)} | ${f(r(`${k}.jobsAlone`), 1)} |`,
    ),
    '',
    'Where the API\'s time goes, GETs alone → GETs with CPU jobs (medians; /proc, summed over the process\'s threads):',
    '',
    '| Setting | API CPU µs/GET | API runnable-but-waiting µs/GET | API wait ms/s | API voluntary switches/GET | API involuntary switches/s | Redis CPU ms/s | Redis wait ms/s | worker CPU ms/s | load generator CPU ms/s |',
    '|---|---|---|---|---|---|---|---|---|---|',
    ...SETTINGS.map(({ name: k }) =>
      `| ${k} | ${pair(k, 'apiCpuPerGet')} | ${pair(k, 'apiWaitPerGet')} | ${pair(k, 'apiWaitPerS', 0)} | ${pair(k, 'apiVolPerGet', 2)} | ${pair(k, 'apiInvolPerS', 0)} | ${pair(k, 'redisCpuPerS', 0)} | ${pair(k, 'redisWaitPerS', 0)} | ${pair(k, 'workerCpuPerS', 0)} | ${pair(k, 'benchCpuPerS', 0)} |`,
    ),
    '',
    'The job traffic alone (no GETs): CPU ms per job of the API (submission, wait, events), the worker (pool threads included) and Redis:',
    '',
    '| Setting | API ms/job | worker ms/job | Redis ms/job |',
    '|---|---|---|---|',
    ...SETTINGS.map(({ name: k }) => `| ${k} | ${f(r(`${k}.apiCpuPerJob`))} | ${f(r(`${k}.workerCpuPerJob`))} | ${f(r(`${k}.redisCpuPerJob`))} |`),
  ];
  return lines.join('\n');
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
