import { blast, BlastResult } from '../load/blast';
import { closedLoop, HttpClient } from '../load/http-client';
import { Saturator } from '../load/saturator';
import { ms, num, perS, spreadOf } from '../report/format';
import type { ScenarioReport } from '../report/report.types';
import { poolSaturated } from '../support/stack';
import { Rounds, summarize } from '../support/stats';
import { BenchContext, fresh, rotate, Scenario, sleep } from './context';

interface System {
  key: 'template' | 'cluster' | 'partitioned' | 'libuv4' | 'libuv16';
  label: string;
  url: string;
  /** The finished job whose GET is the I/O endpoint under test. */
  jobId?: string;
}

/**
 * Seed techniques: every approach the seed articles compare, measured exactly like the template
 * beside it in the same rounds: (a) isolation, GET /v1/jobs/{id} of a finished job with the CPU idle
 * and then with callers keeping ~25 ms pbkdf2 jobs in flight; (b) CPU throughput, jobs/s for the same
 * jobs from a fixed number of callers. The servers are bench/baselines/seed-*.main.ts.
 */
export class SeedsScenario implements Scenario<ScenarioReport> {
  readonly name = 'seeds';
  private readonly rounds = new Rounds();
  private readonly systems: System[];
  private iterations = 0;

  constructor(private readonly ctx: BenchContext) {
    const { api, seedCluster, seedPartitioned, seedLibuv4, seedLibuv16 } = ctx.servers;
    this.systems = [
      { key: 'template', label: 'template (API + worker, piscina)', url: api.url },
      { key: 'cluster', label: 'cluster mode: pbkdf2Sync in the handler, node:cluster × 2', url: seedCluster!.url },
      { key: 'partitioned', label: 'partitioning: pbkdf2Sync in 1,000-iteration slices, setImmediate between', url: seedPartitioned!.url },
      { key: 'libuv4', label: 'libuv pool: async crypto.pbkdf2, UV_THREADPOOL_SIZE=4 (default)', url: seedLibuv4!.url },
      { key: 'libuv16', label: 'libuv pool: async crypto.pbkdf2, UV_THREADPOOL_SIZE=16', url: seedLibuv16!.url },
    ];
  }

  private job() {
    return { salt: fresh(), iterations: this.iterations };
  }

  async beginPass(pass: number): Promise<void> {
    this.iterations = this.ctx.iterationsFor(this.ctx.opts.cpuJobMs);
    if (pass > 1) return;
    this.ctx.progress.log(`${this.name}: warming up every system (${this.iterations} bench-pbkdf2 iterations per job)`);
    for (const system of this.systems) {
      system.jobId = await this.finishedJob(system.url);
      await this.cpuLeg(system, this.ctx.opts.seeds.cpuCallers);
    }
  }

  async round(round: number, rounds: number): Promise<void> {
    const { progress } = this.ctx;
    const o = this.ctx.opts.seeds;
    for (const system of rotate(this.systems, round)) {
      const get = { url: `${system.url}/v1/jobs/${system.jobId}`, connections: o.connections };
      progress.step(this.name, round + 1, rounds, `${system.label}: GET with the CPU idle`);
      const idle = await blast({ ...get, durationS: o.idleS });
      progress.step(this.name, round + 1, rounds, `${system.label}: GET with ${o.callers} callers of ~${this.ctx.opts.cpuJobMs} ms jobs`);
      const started = performance.now();
      const saturator = new Saturator(system.url, o.callers, () => ({ type: 'bench-pbkdf2', input: this.job() }));
      await this.saturated(system);
      const busy = await blast({ ...get, durationS: o.busyS });
      await saturator.stop();
      const loadedS = (performance.now() - started) / 1000;
      if (saturator.completed === 0 || saturator.failed > 0) throw new Error(`${system.label}: ${saturator.completed} CPU jobs completed, ${saturator.failed} failed`);
      this.record(system, idle, busy, saturator.completed / loadedS);
      await sleep(200);
    }
    for (const system of rotate(this.systems, round)) {
      progress.step(this.name, round + 1, rounds, `${system.label}: ${o.cpuJobs} jobs, ${o.cpuCallers} callers`);
      const { jobsPerS, p99 } = await this.cpuLeg(system, o.cpuJobs);
      this.rounds.add(`${system.key}.jobsPerS`, jobsPerS);
      this.rounds.add(`${system.key}.jobP99`, p99);
      progress.log(`  ${system.label}: ${jobsPerS.toFixed(1)} jobs/s, p99 ${p99.toFixed(0)} ms`);
    }
    const last = (name: string) => this.rounds.get(name).values.at(-1)!;
    for (const s of this.systems.slice(1)) this.rounds.add(`${s.key}.cpuRatio`, last('template.jobsPerS') / last(`${s.key}.jobsPerS`));
  }

  private record(system: System, idle: BlastResult, busy: BlastResult, loadedJobsPerS: number): void {
    const k = system.key;
    if (idle.non2xx + idle.errors + busy.non2xx > 0) throw new Error(`${system.label}: GET failed (${idle.non2xx + busy.non2xx} non-2xx, ${idle.errors} errors idle)`);
    this.rounds.add(`${k}.idle.rps`, idle.rps);
    this.rounds.add(`${k}.idle.p99`, idle.latency.p99);
    this.rounds.add(`${k}.busy.rps`, busy.rps);
    this.rounds.add(`${k}.busy.p99`, busy.latency.p99);
    this.rounds.add(`${k}.throughputRatio`, busy.rps / idle.rps);
    this.rounds.add(`${k}.loadedJobsPerS`, loadedJobsPerS);
    this.ctx.progress.log(
      `  ${system.label}: ${idle.rps.toFixed(0)} → ${busy.rps.toFixed(0)} req/s, p99 ${idle.latency.p99.toFixed(1)} → ${busy.latency.p99.toFixed(1)} ms; ` +
        `${loadedJobsPerS.toFixed(1)} CPU jobs/s meanwhile`,
    );
  }

  /** `jobs` pbkdf2 jobs from the scenario's callers in a closed loop, each answered when done. */
  private async cpuLeg(system: System, jobs: number): Promise<{ jobsPerS: number; p99: number }> {
    const callers = this.ctx.opts.seeds.cpuCallers;
    const client = new HttpClient(system.url, callers);
    try {
      const run = await closedLoop({
        concurrency: callers,
        total: jobs,
        task: async () => {
          const reply = await client.json<{ status?: string }>('POST', '/v1/jobs/bench-pbkdf2', { json: this.job(), headers: { prefer: 'wait=30' } });
          if (reply.body?.status !== 'completed') throw new Error(`HTTP ${reply.status}, status ${reply.body?.status}`);
        },
      });
      if (run.errors.length > 0) throw new Error(`${system.label}: pbkdf2 jobs failed: ${run.errors[0]}`);
      return { jobsPerS: jobs / (run.elapsedMs / 1000), p99: summarize(run.latencies).p99 };
    } finally {
      client.close();
    }
  }

  /** Submits a small job and returns its id once finished. */
  private async finishedJob(url: string): Promise<string> {
    const client = new HttpClient(url, 1);
    try {
      const reply = await client.json<{ id: string; status: string }>('POST', '/v1/jobs/bench-pbkdf2', {
        json: { salt: fresh(), iterations: 1000 },
        headers: { prefer: 'wait=30' },
      });
      if (reply.body?.status !== 'completed') throw new Error(`${url}: the warm-up job did not complete (HTTP ${reply.status})`);
      return reply.body.id;
    } finally {
      client.close();
    }
  }

  /** Resolves once the template's pool runs a job on every thread (the seed servers: once they are busy). */
  private async saturated(system: System): Promise<void> {
    // why a fixed pause for the others: they export no count of running jobs.
    if (system.key !== 'template') await sleep(300);
    else await poolSaturated(this.ctx.servers.worker, this.ctx.opts.threads);
  }

  result(): ScenarioReport {
    const r = (name: string) => this.rounds.get(name);
    const o = this.ctx.opts.seeds;
    const scenario = '9. Seed techniques';
    const [template, ...seeds] = this.systems;
    const getFigures = (k: string) =>
      `${perS(r(`${k}.busy.rps`).median)} busy / ${perS(r(`${k}.idle.rps`).median)} idle, p99 ${ms(r(`${k}.busy.p99`).median)} busy`;
    const jobs = (k: string) => `${spreadOf(r(`${k}.jobsPerS`), (v) => perS(v, 'jobs/s'))}, p99 ${ms(r(`${k}.jobP99`).median)}`;
    const rows: ScenarioReport['rows'] = [
      {
        scenario,
        measure: `GET /v1/jobs/{id} req/s with ${o.callers} callers of ~${this.ctx.opts.cpuJobMs} ms pbkdf2 jobs ÷ CPU idle (${o.connections} connections): template`,
        template: getFigures('template'),
        baseline: '',
        ratio: r('template.throughputRatio'),
      },
      ...seeds.map((s) => ({ scenario, measure: `… same, ${s.label}`, template: '', baseline: getFigures(s.key), ratio: r(`${s.key}.throughputRatio`) })),
      ...seeds.map((s) => ({
        scenario,
        measure: `~${this.ctx.opts.cpuJobMs} ms pbkdf2 jobs/s, ${o.cpuCallers} callers: template ÷ ${s.label}`,
        template: jobs('template'),
        baseline: jobs(s.key),
        ratio: r(`${s.key}.cpuRatio`),
      })),
    ];
    const table = [
      '**Seed techniques, side by side** (median of the rounds, min–max):',
      '',
      `| System | GET req/s idle → with ${o.callers} CPU callers | GET p99 idle → loaded | CPU jobs/s while serving GETs | jobs/s, ${o.cpuCallers} callers | job p99 |`,
      '|---|---|---|---|---|---|',
      ...this.systems.map((s) =>
        [
          s.label,
          `${num(r(`${s.key}.idle.rps`).median)} → ${spreadOf(r(`${s.key}.busy.rps`), num)}`,
          `${ms(r(`${s.key}.idle.p99`).median)} → ${spreadOf(r(`${s.key}.busy.p99`), ms)}`,
          spreadOf(r(`${s.key}.loadedJobsPerS`), num),
          spreadOf(r(`${s.key}.jobsPerS`), num),
          ms(r(`${s.key}.jobP99`).median),
        ].join(' | '),
      ).map((line) => `| ${line} |`),
      '',
      `Every system runs pbkdf2-sha512 of ${this.iterations} iterations per job (~${this.ctx.opts.cpuJobMs} ms here) behind the same routes ` +
        '(POST /v1/jobs/bench-pbkdf2 answered when done; GET /v1/jobs/{id} reads the finished job from Redis). The seed servers are bare node:http ' +
        "(bench/baselines/seed-*.main.ts), so their idle GET is cheaper than the template's NestJS route; compare the busy ÷ idle ratios. " +
        `The template's worker runs ${this.ctx.opts.threads} piscina threads at its WORKER_NICE; the libuv pools run at the default priority. ` +
        'Partitioning chains pbkdf2Sync over 1,000-iteration slices (the same HMAC count; the key differs from one call\'s).',
    ];
    return {
      key: 'seeds',
      title: 'Seed techniques',
      rows,
      chart: {
        throughput: {
          title: `Seeds: GET req/s with ${o.callers} CPU callers`,
          unit: 'req/s',
          bars: this.systems.map((s) => ({ label: shortLabel(s.key), value: r(`${s.key}.busy.rps`).median, template: s === template })),
        },
        latency: {
          title: `Seeds: GET p99 with ${o.callers} CPU callers`,
          unit: 'ms',
          bars: this.systems.map((s) => ({ label: shortLabel(s.key), value: r(`${s.key}.busy.p99`).median, template: s === template })),
        },
      },
      sections: [table.join('\n')],
      data: { iterations: this.iterations, ...this.rounds.all() },
    };
  }
}

function shortLabel(key: System['key']): string {
  return { template: 'template', cluster: 'cluster ×2', partitioned: 'partitioning', libuv4: 'libuv pool 4', libuv16: 'libuv pool 16' }[key];
}
