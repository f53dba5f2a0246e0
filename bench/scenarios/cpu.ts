import type Piscina from 'piscina';
import type { AppProcess } from '../../test/support/apps';
import { rawPiscina } from '../baselines/raw-piscina';
import { closedLoop, HttpClient } from '../load/http-client';
import { ms, num, perS, ratio, spreadOf } from '../report/format';
import type { ScenarioReport } from '../report/report.types';
import { startTemplate } from '../support/stack';
import { Rounds, summarize } from '../support/stats';
import { BenchContext, fresh, rotate, Scenario } from './context';
import { loadConfig } from '../../libs/config/src/config';

interface View {
  status: string;
  startedAt?: string;
  finishedAt?: string;
}

interface LegResult {
  jobsPerS: number;
  p99: number;
  /** Mean time a job spent running, ms: the worker's nest_offload_job_run_seconds, or piscina's runTime. */
  runMs: number;
  /** Template only: share of the pool's thread-time inside jobs (BullMQ's processedOn → finishedOn), %. */
  busy?: number;
}

type Leg = { key: string; label: string; threads: number; run: (jobs: number) => Promise<LegResult> };

/**
 * 2. CPU throughput: ~25 ms bench-pbkdf2 jobs with fresh salts, end to end through HTTP → BullMQ → worker →
 * piscina, against raw piscina running the same function on as many threads, at 1 and N threads.
 */
export class CpuScenario implements Scenario<ScenarioReport> {
  readonly name = 'cpu';
  private readonly rounds = new Rounds();
  private readonly pools = new Map<string, Piscina>();
  /** A second template stack with one pool thread, for the scaling figure; lives for one pass. */
  private single?: { api: AppProcess; worker: AppProcess };
  private iterations = 0;

  constructor(private readonly ctx: BenchContext) {}

  private pool(threads: number, nice: number): Piscina {
    let pool = this.pools.get(`${threads}/${nice}`);
    if (!pool) this.pools.set(`${threads}/${nice}`, (pool = rawPiscina(threads, nice)));
    return pool;
  }

  /** The template worker's WORKER_NICE: the bench's override, else the apps' own default. */
  private get nice(): number {
    return Number(this.ctx.templateEnv.WORKER_NICE ?? loadConfig({}).workerNice);
  }

  private legs(): Leg[] {
    const n = this.ctx.opts.threads;
    const legs: Leg[] = [
      { key: `template${n}`, label: `template, ${n} threads`, threads: n, run: (jobs) => this.viaTemplate(this.ctx.servers, n, jobs) },
      { key: `raw${n}`, label: `raw piscina, ${n} threads`, threads: n, run: (jobs) => this.viaPiscina(n, 0, jobs) },
    ];
    // why: the template's threads run at WORKER_NICE; the same nice on raw piscina separates the
    // pipeline's own cost from the price of yielding the CPU to everything else on the host.
    if (this.nice > 0) {
      legs.push({ key: `rawNice${n}`, label: `raw piscina, ${n} threads, niceIncrement ${this.nice}`, threads: n, run: (jobs) => this.viaPiscina(n, this.nice, jobs) });
    }
    if (n > 1) {
      legs.push(
        { key: 'template1', label: 'template, 1 thread', threads: 1, run: (jobs) => this.viaTemplate(this.single!, 1, jobs) },
        { key: 'raw1', label: 'raw piscina, 1 thread', threads: 1, run: (jobs) => this.viaPiscina(1, 0, jobs) },
      );
    }
    return legs;
  }

  async beginPass(): Promise<void> {
    const { opts, progress, templateEnv } = this.ctx;
    this.iterations = this.ctx.iterationsFor(opts.cpuJobMs);
    if (opts.threads > 1) {
      progress.log(`${this.name}: starting a second template stack with WORKER_THREADS=1 for the scaling figure`);
      this.single = await startTemplate(opts.root, { ...templateEnv, REDIS_PREFIX: `${templateEnv.REDIS_PREFIX}-t1`, WORKER_THREADS: '1' }, { dist: opts.dist });
    }
    progress.log(`${this.name}: warming up every leg`);
    for (const leg of this.legs()) await leg.run(leg.threads * 2);
  }

  async endPass(): Promise<void> {
    await Promise.all([this.single?.api.stop(), this.single?.worker.stop()]);
    this.single = undefined;
  }

  async round(round: number, rounds: number): Promise<void> {
    const { opts, progress } = this.ctx;
    // why: half the legs run template-first, half piscina-first, so drift over the round cancels out.
    for (const leg of rotate(this.legs(), round)) {
      const jobs = Math.max(2, Math.round((opts.cpu.jobs * leg.threads) / opts.threads));
      progress.step(this.name, round + 1, rounds, `${leg.label}: ${jobs} pbkdf2 jobs (${this.iterations} iterations)`);
      const { jobsPerS, p99, busy, runMs } = await leg.run(jobs);
      this.rounds.add(`${leg.key}.jobsPerS`, jobsPerS);
      this.rounds.add(`${leg.key}.p99`, p99);
      this.rounds.add(`${leg.key}.runMs`, runMs);
      if (busy !== undefined) this.rounds.add(`${leg.key}.poolBusy`, busy);
      progress.log(`  ${leg.label}: ${jobsPerS.toFixed(1)} jobs/s, ${runMs.toFixed(1)} ms per job on a thread${busy !== undefined ? `, pool busy ${busy.toFixed(0)}%` : ''}`);
    }
    const n = opts.threads;
    this.rounds.add('ratio', this.last(`template${n}.jobsPerS`) / this.last(`raw${n}.jobsPerS`));
    if (this.nice > 0) this.rounds.add('ratioSameNice', this.last(`template${n}.jobsPerS`) / this.last(`rawNice${n}.jobsPerS`));
    if (n > 1) {
      this.rounds.add('ratio1', this.last('template1.jobsPerS') / this.last('raw1.jobsPerS'));
      this.rounds.add('templateScaling', this.last(`template${n}.jobsPerS`) / this.last('template1.jobsPerS'));
      this.rounds.add('rawScaling', this.last(`raw${n}.jobsPerS`) / this.last('raw1.jobsPerS'));
    }
  }

  private last(name: string): number {
    const values = this.rounds.get(name).values;
    return values[values.length - 1];
  }

  private job() {
    return { salt: fresh(), iterations: this.iterations };
  }

  private async viaTemplate(stack: { api: AppProcess; worker: AppProcess }, threads: number, jobs: number): Promise<LegResult> {
    const client = new HttpClient(stack.api.url, this.ctx.opts.cpu.clients);
    const runTime = async () =>
      Promise.all(['nest_offload_job_run_seconds_sum', 'nest_offload_job_run_seconds_count'].map((name) => stack.worker.metric(name, { type: 'bench-pbkdf2' })));
    try {
      const [sum0, count0] = await runTime();
      const run = await closedLoop({
        concurrency: this.ctx.opts.cpu.clients,
        total: jobs,
        task: async () => {
          const reply = await client.json<View>('POST', '/v1/jobs/bench-pbkdf2', { json: this.job(), headers: { prefer: 'wait=60' } });
          if (reply.body?.status !== 'completed') throw new Error(`bench-pbkdf2 job: HTTP ${reply.status}, status ${reply.body?.status}`);
          return reply.body;
        },
      });
      if (run.errors.length > 0) throw new Error(`template CPU jobs failed: ${run.errors[0]}`);
      const [sum1, count1] = await runTime();
      const inJobs = run.results.reduce((sum, v) => sum + (Date.parse(v.finishedAt!) - Date.parse(v.startedAt!)), 0);
      return {
        jobsPerS: jobs / (run.elapsedMs / 1000),
        p99: summarize(run.latencies).p99,
        runMs: ((sum1 - sum0) / (count1 - count0)) * 1000,
        busy: (inJobs / (threads * run.elapsedMs)) * 100,
      };
    } finally {
      client.close();
    }
  }

  private async viaPiscina(threads: number, nice: number, jobs: number): Promise<LegResult> {
    const pool = this.pool(threads, nice);
    pool.histogram.resetRunTime();
    const run = await closedLoop({ concurrency: this.ctx.opts.cpu.clients, total: jobs, task: () => pool.run(this.job()) });
    if (run.errors.length > 0) throw new Error(`raw piscina failed: ${run.errors[0]}`);
    return { jobsPerS: jobs / (run.elapsedMs / 1000), p99: summarize(run.latencies).p99, runMs: pool.histogram.runTime.mean };
  }

  result(): ScenarioReport {
    const r = (name: string) => this.rounds.get(name);
    const n = this.ctx.opts.threads;
    const rows: ScenarioReport['rows'] = [
      {
        scenario: '2. CPU throughput',
        measure: `~${this.ctx.opts.cpuJobMs} ms pbkdf2 jobs/s end to end ÷ raw piscina, ${n} threads`,
        template: spreadOf(r(`template${n}.jobsPerS`), (v) => perS(v, 'jobs/s')),
        baseline: spreadOf(r(`raw${n}.jobsPerS`), (v) => perS(v, 'jobs/s')),
        ratio: r('ratio'),
        target: '≥ 0.85',
        met: r('ratio').median >= 0.85,
      },
    ];
    if (this.nice > 0) {
      rows.push({
        scenario: '2. CPU throughput',
        measure: `… same, ÷ raw piscina with the template's niceIncrement ${this.nice} (the pipeline's own cost)`,
        template: '',
        baseline: spreadOf(r(`rawNice${n}.jobsPerS`), (v) => perS(v, 'jobs/s')),
        ratio: r('ratioSameNice'),
      });
    }
    if (n > 1) {
      rows.push({
        scenario: '2. CPU throughput',
        measure: `thread scaling, jobs/s at ${n} threads ÷ 1 thread (1-thread ratio to raw: ${ratio(r('ratio1'))})`,
        template: `×${num(r('templateScaling').median)} (${perS(r('template1.jobsPerS').median, 'jobs/s')} at 1)`,
        baseline: `×${num(r('rawScaling').median)} (${perS(r('raw1.jobsPerS').median, 'jobs/s')} at 1)`,
        ratio: r('templateScaling'),
      });
    }
    return {
      key: 'cpu',
      title: 'CPU throughput',
      rows,
      chart: {
        throughput: {
          title: `2. CPU: pbkdf2 jobs/s (${n} threads | 1 thread)`,
          unit: 'jobs/s',
          bars: [
            { label: `template ${n}t`, value: r(`template${n}.jobsPerS`).median, template: true },
            { label: `raw piscina ${n}t`, value: r(`raw${n}.jobsPerS`).median, template: false },
            ...(n > 1
              ? [
                  { label: 'template 1t', value: r('template1.jobsPerS').median, template: true },
                  { label: 'raw piscina 1t', value: r('raw1.jobsPerS').median, template: false },
                ]
              : []),
          ],
        },
        latency: {
          title: `2. CPU: job p99, ${this.ctx.opts.cpu.clients} callers`,
          unit: 'ms',
          bars: [
            { label: `template ${n}t`, value: r(`template${n}.p99`).median, template: true },
            { label: `raw piscina ${n}t`, value: r(`raw${n}.p99`).median, template: false },
          ],
        },
      },
      sections: [
        `CPU jobs: pbkdf2-sha512, ${this.iterations} iterations (calibrated to ~${this.ctx.opts.cpuJobMs} ms here), a fresh salt per job; ` +
          `${this.ctx.opts.cpu.clients} callers in a closed loop. Template pool busy share (time inside jobs ÷ thread time): ` +
          `${spreadOf(r(`template${n}.poolBusy`), (v) => `${num(v)}%`)}. Mean time a job ran on its thread: template ` +
          `${spreadOf(r(`template${n}.runMs`), ms)} (worker's nest_offload_job_run_seconds: the thread hop and the run), raw piscina ` +
          `${spreadOf(r(`raw${n}.runMs`), ms)}${this.nice > 0 ? `, raw piscina at nice ${this.nice} ${spreadOf(r(`rawNice${n}.runMs`), ms)}` : ''}: ` +
          'a gap here is CPU the threads lose to the other processes of the pipeline (API, worker loop, Redis, the load generator), not idle threads.',
      ],
      data: { iterations: this.iterations, ...this.rounds.all() },
    };
  }

  async close(): Promise<void> {
    await this.endPass();
    await Promise.all([...this.pools.values()].map((p) => p.destroy()));
  }
}
