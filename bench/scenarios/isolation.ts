import { blast } from '../load/blast';
import { HttpClient, openLoop } from '../load/http-client';
import { Saturator } from '../load/saturator';
import { ms, perS, ratio, spreadOf } from '../report/format';
import type { ScenarioReport } from '../report/report.types';
import { readMetric } from '../support/stack';
import { LatencySummary, Rounds, summarize } from '../support/stats';
import { BenchContext, fresh, rotate, Scenario, sleep } from './context';

interface System {
  key: 'template' | 'inHandler' | 'inProcess';
  label: string;
  url: string;
  /** The finished job whose GET is the I/O endpoint under test. */
  jobId?: string;
}

const LOOP_P99 = 'nest_offload_nodejs_eventloop_lag_p99_seconds';
const LOOP_MAX = 'nest_offload_nodejs_eventloop_lag_max_seconds';

/**
 * 1. Isolation: GET /v1/jobs/{id} of a finished job, with the CPU idle and then with CPU jobs kept
 * in flight, on the template and on two baselines that run the work on their own event loop.
 */
export class IsolationScenario implements Scenario<ScenarioReport> {
  readonly name = 'isolation';
  private readonly rounds = new Rounds();
  private readonly systems: System[];
  private client?: HttpClient;

  constructor(private readonly ctx: BenchContext) {
    const { api, inHandler, inProcess } = ctx.servers;
    this.systems = [
      { key: 'template', label: 'template', url: api.url },
      { key: 'inHandler', label: 'in-handler NestJS', url: inHandler!.url },
      { key: 'inProcess', label: 'in-process @nestjs/bullmq', url: inProcess!.url },
    ];
  }

  async round(round: number, rounds: number): Promise<void> {
    const { opts, progress } = this.ctx;
    const o = opts.isolation;
    const iterations = this.ctx.iterationsFor(o.jobMs);
    for (const system of rotate(this.systems, round)) {
      system.jobId ??= await this.finishedJob(system.url);
      const get = { url: `${system.url}/v1/jobs/${system.jobId}`, connections: o.connections };
      progress.step(this.name, round + 1, rounds, `${system.label}: GET with the CPU idle`);
      const idle = await blast({ ...get, durationS: o.idleS });
      // The template also at a steady, moderate rate: latency at an operating point, not at 100% CPU.
      const fixed = () => this.paced(`/v1/jobs/${system.jobId}`);
      const idleFixed = system.key === 'template' ? await fixed() : undefined;

      progress.step(this.name, round + 1, rounds, `${system.label}: GET with ${o.saturators} CPU jobs (${o.jobMs} ms each) kept in flight`);
      const saturator = new Saturator(system.url, o.saturators, () => ({ type: 'pbkdf2', input: { password: 'bench', salt: fresh(), iterations } }));
      await this.saturated(system);
      await readMetric(system.url, LOOP_P99); // why: reading resets the loop-delay histogram: the next read covers the load only
      const busy = await blast({ ...get, durationS: o.saturatedS });
      const [loopP99, loopMax] = await Promise.all([readMetric(system.url, LOOP_P99), readMetric(system.url, LOOP_MAX)]);
      const busyFixed = idleFixed ? await fixed() : undefined;
      await saturator.stop();
      if (saturator.completed === 0) throw new Error(`${system.label}: no CPU job completed while saturating`);

      const k = system.key;
      this.rounds.add(`${k}.idle.rps`, idle.rps);
      this.rounds.add(`${k}.idle.p99`, idle.latency.p99);
      this.rounds.add(`${k}.busy.rps`, busy.rps);
      this.rounds.add(`${k}.busy.p99`, busy.latency.p99);
      this.rounds.add(`${k}.throughputRatio`, busy.rps / idle.rps);
      // why: idle ÷ busy, so that 1.0 means "unaffected" for latency as for throughput.
      this.rounds.add(`${k}.latencyRatio`, busy.ok > 0 ? idle.latency.p99 / busy.latency.p99 : 0);
      this.rounds.add(`${k}.loopP99`, loopP99 * 1000);
      this.rounds.add(`${k}.loopMax`, loopMax * 1000);
      this.rounds.add(`${k}.cpuJobs`, saturator.completed);
      if (idleFixed && busyFixed) {
        this.rounds.add(`${k}.idleFixed.p99`, idleFixed.latency.p99);
        this.rounds.add(`${k}.busyFixed.p99`, busyFixed.latency.p99);
        this.rounds.add(`${k}.fixedLatencyRatio`, idleFixed.latency.p99 / busyFixed.latency.p99);
      }
      const fixedNote = idleFixed && busyFixed ? `; at ${o.fixedRate} req/s p99 ${idleFixed.latency.p99.toFixed(1)} → ${busyFixed.latency.p99.toFixed(1)} ms` : '';
      progress.log(
        `  ${system.label}: ${idle.rps.toFixed(0)} → ${busy.rps.toFixed(0)} req/s, p99 ${idle.latency.p99.toFixed(1)} → ${busy.latency.p99.toFixed(1)} ms${fixedNote}; ` +
          `loop p99 ${(loopP99 * 1000).toFixed(1)} ms; ${saturator.completed} CPU jobs`,
      );
      await sleep(200);
    }
  }

  /** GETs `path` on the template at the scenario's fixed rate; resolves with the latency summary. */
  private async paced(path: string): Promise<{ latency: LatencySummary }> {
    const { fixedRate, idleS } = this.ctx.opts.isolation;
    // why: one client for every run, so its keep-alive connections are open and warm after the first.
    this.client ??= new HttpClient(this.ctx.servers.api.url, 64);
    const client = this.client;
    const run = await openLoop({ rate: fixedRate, durationMs: idleS * 1000, task: () => client.send('GET', path) });
    const failed = run.results.filter((r) => r.status !== 200).length + run.errors.length;
    if (failed > 0) throw new Error(`template GET at a fixed rate: ${failed} failures`);
    return { latency: summarize(run.latencies) };
  }

  async close(): Promise<void> {
    this.client?.close();
  }

  /** Submits a small job and returns its id once finished. */
  private async finishedJob(url: string): Promise<string> {
    const client = new HttpClient(url, 1);
    try {
      const reply = await client.json<{ id: string; status: string }>('POST', '/v1/jobs/fibonacci', { json: { n: 20 }, headers: { prefer: 'wait=30' } });
      if (reply.body?.status !== 'completed') throw new Error(`${url}: the warm-up job did not complete (HTTP ${reply.status})`);
      return reply.body.id;
    } finally {
      client.close();
    }
  }

  /** Resolves once the template's pool runs a job on every thread (the baselines: once they are busy). */
  private async saturated(system: System): Promise<void> {
    if (system.key !== 'template') {
      await sleep(300);
      return;
    }
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline) {
      if ((await this.ctx.servers.worker.metric('nest_offload_jobs_active')) >= this.ctx.opts.threads) return;
      await sleep(20);
    }
    throw new Error('the worker pool never became saturated');
  }

  result(): ScenarioReport {
    const r = (name: string) => this.rounds.get(name);
    const rows: ScenarioReport['rows'] = [];
    const scenario = '1. Isolation';
    const t = (k: string) => `${perS(r(`${k}.busy.rps`).median)} busy / ${perS(r(`${k}.idle.rps`).median)} idle`;
    rows.push({
      scenario,
      measure: 'GET /v1/jobs/{id} throughput, CPU saturated ÷ idle (vs in-handler NestJS)',
      template: t('template'),
      baseline: `${ratio(r('inHandler.throughputRatio'))} (${t('inHandler')})`,
      ratio: r('template.throughputRatio'),
      target: '≥ 0.8',
      met: r('template.throughputRatio').median >= 0.8,
    });
    rows.push({
      scenario,
      measure: '… same, vs in-process @nestjs/bullmq processor',
      template: '',
      baseline: `${ratio(r('inProcess.throughputRatio'))} (${t('inProcess')})`,
    });
    rows.push({
      scenario,
      measure: `GET p99 latency at full load (${this.ctx.opts.isolation.connections} connections), idle ÷ saturated (1.0 = unaffected)`,
      template: `${ms(r('template.busy.p99').median)} busy / ${ms(r('template.idle.p99').median)} idle`,
      baseline: `in-handler ${ratio(r('inHandler.latencyRatio'))} (p99 ${ms(r('inHandler.busy.p99').median)}); in-process ${ratio(r('inProcess.latencyRatio'))}`,
      ratio: r('template.latencyRatio'),
      target: '≥ 0.8',
      met: r('template.latencyRatio').median >= 0.8,
    });
    rows.push({
      scenario,
      measure: `… same at a fixed ${this.ctx.opts.isolation.fixedRate.toLocaleString('en-US')} req/s (an operating point, not 100% CPU)`,
      template: `${ms(r('template.busyFixed.p99').median)} busy / ${ms(r('template.idleFixed.p99').median)} idle`,
      baseline: '',
      ratio: r('template.fixedLatencyRatio'),
      target: '≥ 0.8',
      met: r('template.fixedLatencyRatio').median >= 0.8,
    });
    rows.push({
      scenario,
      measure: 'API event-loop delay p99 while saturated (prom-client, 10 ms sampling timer included)',
      template: spreadOf(r('template.loopP99'), ms),
      baseline: `in-handler ${ms(r('inHandler.loopP99').median)}; in-process ${ms(r('inProcess.loopP99').median)}`,
      target: '≤ 20 ms',
      met: r('template.loopP99').median <= 20,
    });
    return {
      key: 'isolation',
      title: 'Isolation',
      rows,
      chart: {
        throughput: {
          title: '1. Isolation: GET req/s, CPU saturated',
          unit: 'req/s',
          bars: [
            { label: 'template', value: r('template.busy.rps').median, template: true },
            { label: 'in-handler', value: r('inHandler.busy.rps').median, template: false },
            { label: 'in-process bullmq', value: r('inProcess.busy.rps').median, template: false },
          ],
        },
        latency: {
          title: '1. Isolation: GET p99, CPU saturated',
          unit: 'ms',
          bars: [
            { label: 'template', value: r('template.busy.p99').median, template: true },
            { label: 'in-handler', value: r('inHandler.busy.p99').median, template: false },
            { label: 'in-process bullmq', value: r('inProcess.busy.p99').median, template: false },
          ],
        },
      },
      sections: [],
      data: this.rounds.all(),
    };
  }
}
