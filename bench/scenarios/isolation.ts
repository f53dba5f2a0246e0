import { blast, BlastResult } from '../load/blast';
import { HttpClient, openLoop } from '../load/http-client';
import { Saturator } from '../load/saturator';
import { ms, num, perS, ratio, spreadOf } from '../report/format';
import type { ScenarioReport } from '../report/report.types';
import { CpuPinning } from '../support/cpu-affinity';
import { poolSaturated, readMetric } from '../support/stack';
import { LatencySummary, Rounds, Spread, summarize } from '../support/stats';
import { BenchContext, fresh, rotate, Scenario, sleep } from './context';

interface System {
  /** `pinned`: the template again, with its API alone on core 0 and everything else on core 1. */
  key: 'template' | 'pinned' | 'inHandler' | 'inProcess';
  label: string;
  url: string;
  /** The finished job whose GET is the I/O endpoint under test. */
  jobId?: string;
}

/** One system measured once: GET load with the CPU idle, then with CPU jobs kept in flight. */
interface Measured {
  idle: BlastResult;
  busy: BlastResult;
  loopP99: number;
  loopMax: number;
  /** CPU jobs completed per second during the busy GET load. */
  jobsPerS: number;
  idleFixed?: { latency: LatencySummary };
  busyFixed?: { latency: LatencySummary };
}

const LOOP_P99 = 'nest_offload_nodejs_eventloop_lag_p99_seconds';
const LOOP_MAX = 'nest_offload_nodejs_eventloop_lag_max_seconds';
/**
 * The loop-delay p99 and max of one /metrics scrape. why one: each scrape resets prom-client's
 * histogram, so two concurrent scrapes let the second read an almost empty one (round 1 read 0.5 ms).
 */
async function loopDelay(url: string): Promise<{ loopP99: number; loopMax: number }> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const value = (name: string) => Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
  return { loopP99: value(LOOP_P99), loopMax: value(LOOP_MAX) };
}

/** The core the API gets to itself in the pinned configuration, and the one everything else shares. */
const API_CPU = '0';
const REST_CPU = '1';

/**
 * 1. Isolation: GET /v1/jobs/{id} of a finished job, with the CPU idle and then with ~25 ms CPU jobs
 * kept in flight, on the template (everything on the shared cores, and again with the API pinned to
 * a core of its own) and on two baselines that run the work on their own event loop.
 */
export class IsolationScenario implements Scenario<ScenarioReport> {
  readonly name = 'isolation';
  private readonly rounds = new Rounds();
  private readonly systems: System[];
  /** Why the pinned configuration is not measured, if it is not. */
  private readonly pinSkipped?: string;
  private client?: HttpClient;

  constructor(private readonly ctx: BenchContext) {
    const { api, inHandler, inProcess } = ctx.servers;
    this.pinSkipped = CpuPinning.unavailable() ?? (ctx.redis.own ? undefined : 'Redis is not the bench\'s own (REDIS_URL): it cannot be pinned');
    this.systems = [
      { key: 'template', label: 'template', url: api.url },
      ...(this.pinSkipped ? [] : [{ key: 'pinned', label: 'template, API pinned to core 0', url: api.url } as System]),
      { key: 'inHandler', label: 'in-handler NestJS', url: inHandler!.url },
      { key: 'inProcess', label: 'in-process @nestjs/bullmq', url: inProcess!.url },
    ];
  }

  async round(round: number, rounds: number): Promise<void> {
    const { progress } = this.ctx;
    for (const system of rotate(this.systems, round)) {
      system.jobId ??= await this.finishedJob(system.url);
      const pinning = system.key === 'pinned' ? await this.pinApiApart() : undefined;
      let m: Measured;
      try {
        m = await this.measure(system, round, rounds);
      } finally {
        pinning?.restore();
      }
      const k = system.key;
      this.rounds.add(`${k}.idle.rps`, m.idle.rps);
      this.rounds.add(`${k}.idle.p99`, m.idle.latency.p99);
      this.rounds.add(`${k}.busy.rps`, m.busy.rps);
      this.rounds.add(`${k}.busy.p99`, m.busy.latency.p99);
      this.rounds.add(`${k}.throughputRatio`, m.busy.rps / m.idle.rps);
      // why: idle ÷ busy, so that 1.0 means "unaffected" for latency as for throughput.
      this.rounds.add(`${k}.latencyRatio`, m.busy.ok > 0 ? m.idle.latency.p99 / m.busy.latency.p99 : 0);
      this.rounds.add(`${k}.loopP99`, m.loopP99 * 1000);
      this.rounds.add(`${k}.loopMax`, m.loopMax * 1000);
      this.rounds.add(`${k}.jobsPerS`, m.jobsPerS);
      if (m.idleFixed && m.busyFixed) {
        this.rounds.add(`${k}.idleFixed.p99`, m.idleFixed.latency.p99);
        this.rounds.add(`${k}.busyFixed.p99`, m.busyFixed.latency.p99);
        this.rounds.add(`${k}.fixedLatencyRatio`, m.idleFixed.latency.p99 / m.busyFixed.latency.p99);
      }
      const fixedNote = m.idleFixed && m.busyFixed ? `; at ${this.ctx.opts.isolation.fixedRate} req/s p99 ${m.idleFixed.latency.p99.toFixed(1)} → ${m.busyFixed.latency.p99.toFixed(1)} ms` : '';
      progress.log(
        `  ${system.label}: ${m.idle.rps.toFixed(0)} → ${m.busy.rps.toFixed(0)} req/s (${(m.busy.rps / m.idle.rps).toFixed(3)}), ` +
          `p99 ${m.idle.latency.p99.toFixed(1)} → ${m.busy.latency.p99.toFixed(1)} ms${fixedNote}; loop p99 ${(m.loopP99 * 1000).toFixed(1)} ms; ${m.jobsPerS.toFixed(1)} CPU jobs/s`,
      );
      await sleep(200);
    }
  }

  private async measure(system: System, round: number, rounds: number): Promise<Measured> {
    const { opts, progress } = this.ctx;
    const o = opts.isolation;
    const get = { url: `${system.url}/v1/jobs/${system.jobId}`, connections: o.connections };
    if (round === 0) {
      // why: the first seconds of load run the API's GET path cold (JIT, connection pools); measured, they made round 1's idle figure the lowest and its ratio above 1.
      progress.step(this.name, round + 1, rounds, `${system.label}: warming up`);
      await blast({ ...get, durationS: Math.min(1, o.idleS) });
    }
    progress.step(this.name, round + 1, rounds, `${system.label}: GET with the CPU idle`);
    const idle = await blast({ ...get, durationS: o.idleS });
    // The template also at a steady, moderate rate: latency at an operating point, not at 100% CPU.
    const fixed = system.key === 'template' ? () => this.paced(`/v1/jobs/${system.jobId}`) : undefined;
    const idleFixed = await fixed?.();

    progress.step(this.name, round + 1, rounds, `${system.label}: GET with ${o.saturators} callers of ~${o.jobMs} ms CPU jobs`);
    const iterations = this.ctx.iterationsFor(o.jobMs);
    const saturator = new Saturator(system.url, o.saturators, () => ({ type: 'bench-pbkdf2', input: { salt: fresh(), iterations } }));
    try {
      await this.saturated(system);
      await readMetric(system.url, LOOP_P99); // why: reading resets the loop-delay histogram: the next read covers the load only
      const jobsBefore = saturator.completed;
      const busy = await blast({ ...get, durationS: o.saturatedS });
      const jobsPerS = (saturator.completed - jobsBefore) / o.saturatedS;
      const { loopP99, loopMax } = await loopDelay(system.url);
      const busyFixed = await fixed?.();
      return { idle, busy, loopP99, loopMax, jobsPerS, idleFixed, busyFixed };
    } finally {
      await saturator.stop();
      if (saturator.completed === 0) throw new Error(`${system.label}: no CPU job completed while saturating`);
    }
  }

  /**
   * The API alone on core 0; its worker, Redis, the baselines and this process (the load generator)
   * on core 1. Returns the pinning, to restore once measured.
   */
  private async pinApiApart(): Promise<CpuPinning> {
    const { servers, redisClient } = this.ctx;
    const pinning = new CpuPinning();
    try {
      const redisPid = Number(/^process_id:(\d+)/m.exec(await redisClient.info('server'))?.[1]);
      pinning.pin(servers.api.pid, API_CPU);
      for (const app of Object.values(servers)) if (app && app !== servers.api) pinning.pin(app.pid, REST_CPU);
      pinning.pin(redisPid, REST_CPU);
      pinning.pin(process.pid, REST_CPU);
    } catch (error) {
      pinning.restore();
      throw error;
    }
    await sleep(100); // why: let the scheduler migrate the threads before measuring
    return pinning;
  }

  /** GETs `path` on the template at the scenario's fixed rate; resolves with the latency summary. */
  private async paced(path: string): Promise<{ latency: LatencySummary }> {
    const { fixedRate, fixedS } = this.ctx.opts.isolation;
    // why: one client for every run, so its keep-alive connections are open and warm after the first.
    this.client ??= new HttpClient(this.ctx.servers.api.url, 64);
    const client = this.client;
    const run = await openLoop({ rate: fixedRate, durationMs: fixedS * 1000, task: () => client.send('GET', path) });
    const failed = run.results.filter((r) => r.status !== 200).length + run.errors.length;
    if (failed > 0) throw new Error(`template GET at a fixed rate: ${failed} failures`);
    return { latency: summarize(run.latencies) };
  }

  async close(): Promise<void> {
    this.client?.close();
  }

  /** Submits a small job and returns its id once finished. */
  private async finishedJob(url: string): Promise<string> {
    const same = this.systems.find((s) => s.url === url && s.jobId);
    if (same) return same.jobId!;
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
    // why a fixed pause for the others: they export no count of running jobs.
    if (system.key !== 'template' && system.key !== 'pinned') await sleep(300);
    else await poolSaturated(this.ctx.servers.worker, this.ctx.opts.threads);
  }

  result(): ScenarioReport {
    const r = (name: string) => this.rounds.get(name);
    const o = this.ctx.opts.isolation;
    const rows: ScenarioReport['rows'] = [];
    const scenario = '1. Isolation';
    const t = (k: string) => `${perS(r(`${k}.busy.rps`).median)} busy / ${perS(r(`${k}.idle.rps`).median)} idle`;
    const everyRound = (s: Spread) => `rounds ${s.values.map(num).join(', ')}`;
    const pinnedLabel = `API alone on core ${API_CPU} (taskset); worker, Redis, load generator on core ${REST_CPU}`;
    rows.push({
      scenario,
      measure: `GET /v1/jobs/{id} throughput (${o.connections} connections), ${o.saturators} callers of ~${o.jobMs} ms CPU jobs ÷ CPU idle, 2 shared cores (vs in-handler NestJS)`,
      template: `${t('template')}; ${everyRound(r('template.throughputRatio'))}`,
      baseline: `${ratio(r('inHandler.throughputRatio'))} (${t('inHandler')})`,
      ratio: r('template.throughputRatio'),
      target: '≥ 0.8 in every round',
      met: r('template.throughputRatio').min >= 0.8,
    });
    rows.push({
      scenario,
      measure: '… same, vs in-process @nestjs/bullmq processor',
      template: '',
      baseline: `${ratio(r('inProcess.throughputRatio'))} (${t('inProcess')})`,
    });
    rows.push(
      this.pinSkipped
        ? { scenario, measure: `… same, ${pinnedLabel}`, template: `not measured: ${this.pinSkipped}`, baseline: '' }
        : {
            scenario,
            measure: `… same, ${pinnedLabel}`,
            template: `${t('pinned')}; ${everyRound(r('pinned.throughputRatio'))}`,
            baseline: '',
            ratio: r('pinned.throughputRatio'),
            target: '≥ 0.95',
            met: r('pinned.throughputRatio').median >= 0.95,
          },
    );
    rows.push({
      scenario,
      measure: `GET p99 latency at full load (${o.connections} connections), idle ÷ saturated (1.0 = unaffected)`,
      template: `${ms(r('template.busy.p99').median)} busy / ${ms(r('template.idle.p99').median)} idle` + (this.pinSkipped ? '' : `; API pinned ${ratio(r('pinned.latencyRatio'))}`),
      baseline: `in-handler ${ratio(r('inHandler.latencyRatio'))} (p99 ${ms(r('inHandler.busy.p99').median)}); in-process ${ratio(r('inProcess.latencyRatio'))}`,
      ratio: r('template.latencyRatio'),
      target: '≥ 0.8',
      met: r('template.latencyRatio').median >= 0.8,
    });
    rows.push({
      scenario,
      measure: `… same at a fixed ${o.fixedRate.toLocaleString('en-US')} req/s (an operating point, not 100% CPU)`,
      template: `${ms(r('template.busyFixed.p99').median)} busy / ${ms(r('template.idleFixed.p99').median)} idle`,
      baseline: '',
      ratio: r('template.fixedLatencyRatio'),
      target: '≥ 0.8',
      met: r('template.fixedLatencyRatio').median >= 0.8,
    });
    rows.push({
      scenario,
      measure: 'API event-loop delay p99 under GET load + CPU jobs (prom-client, 10 ms sampling timer included), 2 shared cores',
      template: spreadOf(r('template.loopP99'), ms),
      baseline: `in-handler ${ms(r('inHandler.loopP99').median)}; in-process ${ms(r('inProcess.loopP99').median)}`,
      target: '≤ 20 ms',
      met: r('template.loopP99').median <= 20,
    });
    if (!this.pinSkipped) {
      rows.push({ scenario, measure: `… same, ${pinnedLabel}`, template: spreadOf(r('pinned.loopP99'), ms), baseline: '', target: '≤ 20 ms', met: r('pinned.loopP99').median <= 20 });
    }
    rows.push({
      scenario,
      measure: `CPU jobs/s completed meanwhile (the ${o.saturators} callers, during the GET load)`,
      template: spreadOf(r('template.jobsPerS'), (n) => perS(n, 'jobs/s')) + (this.pinSkipped ? '' : `; API pinned ${spreadOf(r('pinned.jobsPerS'), (n) => perS(n, 'jobs/s'))}`),
      baseline: `in-handler ${perS(r('inHandler.jobsPerS').median, 'jobs/s')}; in-process ${perS(r('inProcess.jobsPerS').median, 'jobs/s')}`,
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
