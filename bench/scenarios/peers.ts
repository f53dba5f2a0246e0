import { join } from 'node:path';
import type { AppProcess } from '../../test/support/apps';
import { blast, BlastResult } from '../load/blast';
import { closedLoop, HttpClient } from '../load/http-client';
import { Saturator } from '../load/saturator';
import { ms, num, perS, ratio, spreadOf } from '../report/format';
import type { ScenarioReport } from '../report/report.types';
import { cpuMs, readMetric, startNode } from '../support/stack';
import { Rounds, summarize } from '../support/stats';
import { BenchContext, fresh, nextTrivial, rotate, Scenario, sleep } from './context';

type SideKey = 'template' | 'inline' | 'peer';

interface Side {
  key: SideKey;
  label: string;
  /** The trivial job's type: `bench-sum`, or on the `inline` side (the template's apps again, trivial legs only) its inline twin. */
  trivial: string;
  api: AppProcess;
  worker: AppProcess;
  /** Keep-alive clients by socket count, opened once so every leg runs on warm connections. */
  clients: Map<number, HttpClient>;
  /** The finished job whose GET is the isolation leg's I/O endpoint. */
  jobId?: string;
}

interface Reply {
  id: string;
  status: string;
}

// why: the template's name, which the peer's API exports too (the same prom-client collector).
const LOOP_P99 = 'nest_offload_nodejs_eventloop_lag_p99_seconds';
const SCENARIO = '8. Peer';

/**
 * 8. The peer users would pick instead: the conventional NestJS + @nestjs/bullmq setup of the
 * boilerplates, an API that adds the job and waits for it over HTTP and a separate Nest worker
 * process running the same job `run` on its event loop (baselines/peer-*.ts). Same HTTP client,
 * same jobs, alternating rounds: trivial jobs/s at 32 callers, one caller's p50/p99, ~25 ms CPU
 * jobs/s, and each API's isolation (GET of a finished job, CPU idle vs fed with CPU jobs).
 */
export class PeersScenario implements Scenario<ScenarioReport> {
  readonly name = 'peers';
  private readonly rounds = new Rounds();
  private sides?: Side[];
  private iterations = 0;

  constructor(private readonly ctx: BenchContext) {}

  async beginPass(): Promise<void> {
    const { opts, progress } = this.ctx;
    this.iterations = this.ctx.iterationsFor(opts.cpuJobMs);
    if (!this.sides) {
      const peer = await this.startPeer();
      progress.log(`${this.name}: peer API pid ${peer.api.pid}, peer worker pid ${peer.worker.pid}; template API pid ${this.ctx.servers.api.pid}, worker pid ${this.ctx.servers.worker.pid}`);
      const { api, worker } = this.ctx.servers;
      this.sides = [
        { key: 'template', label: 'template', trivial: 'bench-sum', api, worker, clients: new Map() },
        { key: 'inline', label: 'template, inline type', trivial: 'bench-sum-inline', api, worker, clients: new Map() },
        { key: 'peer', label: 'peer (@nestjs/bullmq API + worker)', trivial: 'bench-sum', ...peer, clients: new Map() },
      ];
    }
    progress.log(`${this.name}: warming up every side`);
    for (const side of this.sides) {
      if (side.key !== 'inline') side.jobId ??= (await this.submit(side, 1, 'fibonacci', { n: 20 })).id;
      await closedLoop({ concurrency: 1, total: 20, task: () => this.submit(side, 1, side.trivial, nextTrivial()) });
      if (side.key !== 'inline') await closedLoop({ concurrency: 2, total: 4, task: () => this.submit(side, 2, 'bench-pbkdf2', this.cpuInput()) });
    }
  }

  /** The peer's two processes, on their own key prefix, with the template's node flags (for profiles). */
  private async startPeer(): Promise<{ api: AppProcess; worker: AppProcess }> {
    const { opts, redis, prefix } = this.ctx;
    const env = { REDIS_URL: redis.url, REDIS_PREFIX: `${prefix}-peer`, NODE_ENV: 'production', CONCURRENCY: String(opts.threads) };
    const script = (name: string) => join(__dirname, '..', 'baselines', name);
    const started = await Promise.allSettled([
      startNode(script('peer-api.main.js'), env, { cwd: opts.root, nodeArgs: opts.nodeArgs }),
      startNode(script('peer-worker.main.js'), env, { cwd: opts.root, kind: 'worker', nodeArgs: opts.nodeArgs }),
    ]);
    const [api, worker] = started.map((s) => (s.status === 'fulfilled' ? s.value : undefined));
    const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failed || !api || !worker) {
      await Promise.all([api?.stop(), worker?.stop()]);
      throw failed?.reason;
    }
    return { api, worker };
  }

  async round(round: number, rounds: number): Promise<void> {
    const { opts, progress } = this.ctx;
    const o = opts.peers;
    const step = (text: string) => progress.step(this.name, round + 1, rounds, text);
    const sides = rotate(this.sides!, round);
    // The inline side is the template's apps again: the legs that do not use the trivial type run on two sides.
    const twoSides = sides.filter((side) => side.key !== 'inline');

    for (const side of sides) {
      step(`${side.label}: ${o.callers} callers, trivial ${side.trivial} jobs for ${o.durationS} s`);
      const pids = [side.api.pid, side.worker.pid];
      const cpuBefore = pids.map(cpuMs);
      const run = await closedLoop({ concurrency: o.callers, durationMs: o.durationS * 1000, task: () => this.submit(side, o.callers, side.trivial, nextTrivial()) });
      if (run.errors.length > 0) throw new Error(`${side.label}: ${run.errors[0]}`);
      this.rounds.add(`${side.key}.jobsPerS`, run.results.length / (run.elapsedMs / 1000));
      this.rounds.add(`${side.key}.cpuPerJob.api`, (cpuMs(pids[0]) - cpuBefore[0]) / run.results.length);
      this.rounds.add(`${side.key}.cpuPerJob.worker`, (cpuMs(pids[1]) - cpuBefore[1]) / run.results.length);
    }
    for (const side of sides) {
      step(`${side.label}: ${o.sequential} trivial jobs, one caller`);
      const run = await closedLoop({ concurrency: 1, total: o.sequential, task: () => this.submit(side, 1, side.trivial, nextTrivial()) });
      if (run.errors.length > 0) throw new Error(`${side.label}: ${run.errors[0]}`);
      const latency = summarize(run.latencies);
      this.rounds.add(`${side.key}.p50`, latency.p50);
      this.rounds.add(`${side.key}.p99`, latency.p99);
    }
    for (const side of twoSides) {
      step(`${side.label}: ${o.cpuJobs} pbkdf2 jobs (${this.iterations} iterations), ${o.cpuCallers} callers`);
      const run = await closedLoop({ concurrency: o.cpuCallers, total: o.cpuJobs, task: () => this.submit(side, o.cpuCallers, 'bench-pbkdf2', this.cpuInput()) });
      if (run.errors.length > 0) throw new Error(`${side.label}: ${run.errors[0]}`);
      this.rounds.add(`${side.key}.cpuJobsPerS`, o.cpuJobs / (run.elapsedMs / 1000));
    }
    for (const side of twoSides) await this.isolation(side, step);

    const last = (name: string) => this.rounds.get(name).values.at(-1)!;
    this.rounds.add('throughputRatio', last('template.jobsPerS') / last('peer.jobsPerS'));
    this.rounds.add('p50Ratio', last('template.p50') / last('peer.p50'));
    this.rounds.add('p50Diff', last('template.p50') - last('peer.p50'));
    this.rounds.add('p99Ratio', last('template.p99') / last('peer.p99'));
    this.rounds.add('cpuRatio', last('template.cpuJobsPerS') / last('peer.cpuJobsPerS'));
    this.rounds.add('inline.throughputRatio', last('inline.jobsPerS') / last('peer.jobsPerS'));
    this.rounds.add('inline.p50Diff', last('inline.p50') - last('peer.p50'));
    this.rounds.add('inline.byThread', last('inline.jobsPerS') / last('template.jobsPerS'));
    progress.log(`  template, inline type: ${num(last('inline.jobsPerS'))} trivial jobs/s; alone p50 ${ms(last('inline.p50'))}, p99 ${ms(last('inline.p99'))}`);
    for (const side of twoSides) {
      const k = side.key;
      progress.log(
        `  ${side.label}: ${num(last(`${k}.jobsPerS`))} trivial jobs/s; alone p50 ${ms(last(`${k}.p50`))}, p99 ${ms(last(`${k}.p99`))}; ` +
          `${num(last(`${k}.cpuJobsPerS`))} CPU jobs/s; GET ${num(last(`${k}.idle.rps`))} → ${num(last(`${k}.busy.rps`))} req/s, ` +
          `loop p99 ${ms(last(`${k}.idle.loopP99`))} → ${ms(last(`${k}.busy.loopP99`))}`,
      );
    }
  }

  /** GET of a finished job at full load, CPU idle and then with `feeders` callers keeping CPU jobs in flight. */
  private async isolation(side: Side, step: (text: string) => void): Promise<void> {
    const o = this.ctx.opts.peers;
    const url = side.api.url;
    const get = { url: `${url}/v1/jobs/${side.jobId}`, connections: o.connections };
    // why: reading resets prom-client's loop-delay histogram, so each read after a leg covers that leg only.
    const loopP99 = async () => (await readMetric(url, LOOP_P99)) * 1000;

    step(`${side.label}: GET, ${o.connections} connections, CPU idle`);
    await loopP99();
    const idle = await blast({ ...get, durationS: o.idleS });
    const idleLoop = await loopP99();

    step(`${side.label}: GET with ${o.feeders} callers feeding ~${this.ctx.opts.cpuJobMs} ms jobs`);
    const saturator = new Saturator(url, o.feeders, () => ({ type: 'bench-pbkdf2', input: this.cpuInput() }));
    // why: the same settling time on both sides, so the busy leg starts with the worker(s) running jobs.
    await sleep(500);
    await loopP99();
    const doneBefore = saturator.completed;
    const busy = await blast({ ...get, durationS: o.busyS });
    const busyLoop = await loopP99();
    const cpuJobs = saturator.completed - doneBefore;
    await saturator.stop();
    if (cpuJobs === 0) throw new Error(`${side.label}: no CPU job completed during the busy GET leg`);
    const bad = (r: BlastResult) => r.non2xx + r.errors;
    if (bad(idle) + bad(busy) > 0) throw new Error(`${side.label}: GET answered ${bad(idle) + bad(busy)} errors or non-2xx`);

    const k = side.key;
    this.rounds.add(`${k}.idle.rps`, idle.rps);
    this.rounds.add(`${k}.busy.rps`, busy.rps);
    this.rounds.add(`${k}.idle.p99`, idle.latency.p99);
    this.rounds.add(`${k}.busy.p99`, busy.latency.p99);
    this.rounds.add(`${k}.isolation`, busy.rps / idle.rps);
    this.rounds.add(`${k}.idle.loopP99`, idleLoop);
    this.rounds.add(`${k}.busy.loopP99`, busyLoop);
    this.rounds.add(`${k}.busy.cpuJobsPerS`, cpuJobs / o.busyS);
    await sleep(200);
  }

  private cpuInput() {
    return { salt: fresh(), iterations: this.iterations };
  }

  /** Submits a job and waits for it (`Prefer: wait`); resolves with the finished view. */
  private async submit(side: Side, sockets: number, type: string, input: unknown): Promise<Reply> {
    let client = side.clients.get(sockets);
    if (!client) side.clients.set(sockets, (client = new HttpClient(side.api.url, sockets)));
    const reply = await client.json<Reply>('POST', `/v1/jobs/${type}`, { json: input, headers: { prefer: 'wait=60' } });
    if (reply.status !== 200 || reply.body?.status !== 'completed') throw new Error(`${side.label} ${type} job: HTTP ${reply.status}, status ${reply.body?.status}`);
    return reply.body;
  }

  result(): ScenarioReport {
    const r = (name: string) => this.rounds.get(name);
    const o = this.ctx.opts.peers;
    const jobs = (v: number) => perS(v, 'jobs/s');
    const iso = (k: SideKey) => `${ratio(r(`${k}.isolation`))} (${perS(r(`${k}.busy.rps`).median)} busy / ${perS(r(`${k}.idle.rps`).median)} idle)`;
    const loop = (k: SideKey) => `${spreadOf(r(`${k}.busy.loopP99`), ms)} busy / ${spreadOf(r(`${k}.idle.loopP99`), ms)} idle`;
    const rows: ScenarioReport['rows'] = [
      {
        scenario: SCENARIO,
        measure: `trivial \`bench-sum\` jobs/s, ${o.callers} callers submitting and waiting, ÷ peer`,
        template: spreadOf(r('template.jobsPerS'), jobs),
        baseline: spreadOf(r('peer.jobsPerS'), jobs),
        ratio: r('throughputRatio'),
        target: '≥ 1.0',
        met: r('throughputRatio').median >= 1,
      },
      {
        scenario: SCENARIO,
        measure: `submit-and-wait p50, one caller, ÷ peer (added latency template − peer: ${spreadOf(r('p50Diff'), ms)})`,
        template: spreadOf(r('template.p50'), ms),
        baseline: spreadOf(r('peer.p50'), ms),
        ratio: r('p50Ratio'),
        target: '≤ 1.0',
        met: r('p50Ratio').median <= 1,
      },
      {
        scenario: SCENARIO,
        measure: '… p99, one caller, ÷ peer',
        template: spreadOf(r('template.p99'), ms),
        baseline: spreadOf(r('peer.p99'), ms),
        ratio: r('p99Ratio'),
      },
      {
        scenario: SCENARIO,
        measure: `… the same with an inline type (\`bench-sum-inline\`, run on the worker's event loop), ÷ peer (÷ on a pool thread: ${ratio(r('inline.byThread'))})`,
        template: spreadOf(r('inline.jobsPerS'), jobs),
        baseline: spreadOf(r('peer.jobsPerS'), jobs),
        ratio: r('inline.throughputRatio'),
      },
      {
        scenario: SCENARIO,
        measure: `… its p50, one caller (added latency inline − peer: ${spreadOf(r('inline.p50Diff'), ms)})`,
        template: spreadOf(r('inline.p50'), ms),
        baseline: spreadOf(r('peer.p50'), ms),
      },
      {
        scenario: SCENARIO,
        measure: `~${this.ctx.opts.cpuJobMs} ms pbkdf2 jobs/s, ${o.cpuCallers} callers, ${this.ctx.opts.threads} threads vs worker concurrency ${this.ctx.opts.threads}, ÷ peer`,
        template: spreadOf(r('template.cpuJobsPerS'), jobs),
        baseline: spreadOf(r('peer.cpuJobsPerS'), jobs),
        ratio: r('cpuRatio'),
        target: '≥ 1.0',
        met: r('cpuRatio').median >= 1,
      },
      {
        scenario: SCENARIO,
        measure: `API isolation: GET /v1/jobs/{id} req/s (${o.connections} connections), ${o.feeders} callers feeding CPU jobs ÷ CPU idle`,
        template: iso('template'),
        baseline: iso('peer'),
        ratio: r('template.isolation'),
        target: '≥ 0.8',
        met: r('template.isolation').median >= 0.8,
      },
      {
        scenario: SCENARIO,
        measure: 'API event-loop delay p99 (prom-client, 10 ms sampling timer included), fed vs idle',
        template: loop('template'),
        baseline: loop('peer'),
      },
      {
        scenario: SCENARIO,
        measure: '… GET p99 latency fed / idle; CPU jobs/s done meanwhile',
        template: `${ms(r('template.busy.p99').median)} / ${ms(r('template.idle.p99').median)}; ${jobs(r('template.busy.cpuJobsPerS').median)}`,
        baseline: `${ms(r('peer.busy.p99').median)} / ${ms(r('peer.idle.p99').median)}; ${jobs(r('peer.busy.cpuJobsPerS').median)}`,
      },
    ];
    const cpu = (k: SideKey, p: string) => num(r(`${k}.cpuPerJob.${p}`).median);
    return {
      key: 'peers',
      title: 'Peer: NestJS + @nestjs/bullmq, API and worker',
      rows,
      chart: {
        throughput: {
          title: `8. Peer: jobs/s (trivial, ${o.callers} callers | ~${this.ctx.opts.cpuJobMs} ms CPU)`,
          unit: 'jobs/s',
          bars: [
            { label: 'template trivial', value: r('template.jobsPerS').median, template: true },
            { label: 'peer trivial', value: r('peer.jobsPerS').median, template: false },
            { label: 'template CPU', value: r('template.cpuJobsPerS').median, template: true },
            { label: 'peer CPU', value: r('peer.cpuJobsPerS').median, template: false },
          ],
        },
        latency: {
          title: '8. Peer: one caller, p50 | p99',
          unit: 'ms',
          bars: [
            { label: 'template p50', value: r('template.p50').median, template: true },
            { label: 'peer p50', value: r('peer.p50').median, template: false },
            { label: 'template p99', value: r('template.p99').median, template: true },
            { label: 'peer p99', value: r('peer.p99').median, template: false },
          ],
        },
      },
      sections: [
        'The peer (bench/baselines/peer-*.ts): a Nest API on Fastify with `BullModule.forRoot/registerQueue` whose POST ' +
          '`queue.add`s the job and, under `Prefer: wait`, answers after `job.waitUntilFinished` on a QueueEvents; a separate Nest ' +
          `worker process whose @nestjs/bullmq processor (concurrency ${this.ctx.opts.threads}) calls the same job \`run\` as the template's pool threads (bench/support/bench-jobs.ts) on its event loop. ` +
          `No cache, single flight, cancel checks, idempotency or backlog bound. pbkdf2: ${this.iterations} iterations, fresh salts. ` +
          `CPU per trivial job at ${o.callers} callers (ms, /proc): template API ${cpu('template', 'api')}, worker ${cpu('template', 'worker')}; ` +
          `with the inline type API ${cpu('inline', 'api')}, worker ${cpu('inline', 'worker')}; ` +
          `peer API ${cpu('peer', 'api')}, worker ${cpu('peer', 'worker')}.`,
      ],
      data: { iterations: this.iterations, ...this.rounds.all() },
    };
  }

  async close(): Promise<void> {
    for (const side of this.sides ?? []) for (const client of side.clients.values()) client.close();
    const peer = this.sides?.find((s) => s.key === 'peer');
    const stop = async (p?: AppProcess) => {
      if (!p) return;
      const killer = setTimeout(() => p.signal('SIGKILL'), 15_000);
      await p.stop('SIGTERM');
      clearTimeout(killer);
    };
    await Promise.all([stop(peer?.api), stop(peer?.worker)]);
  }
}
