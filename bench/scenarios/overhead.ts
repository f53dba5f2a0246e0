import { closedLoop, HttpClient } from '../load/http-client';
import { RawBullmqClient } from '../load/raw-bullmq.client';
import { ms, num, perS, spreadOf } from '../report/format';
import type { ScenarioReport } from '../report/report.types';
import { Census, redisCensus } from '../support/redis-census';
import { cpuMs, redisCommandCount } from '../support/stack';
import { Rounds, summarize } from '../support/stats';
import { BenchContext, nextTrivial, rotate, Scenario } from './context';
import { MicroTimings, microTimings } from './overhead.micro';

interface View {
  status: string;
  createdAt: string;
  startedAt?: string;
  finishedAt?: string;
}

/** Where one job's time went, in ms, from the client's clock and the job's own timestamps. */
interface Steps {
  total: number;
  /** Client send → job created (API: HTTP in, validation + hashing, cache check, backlog count). */
  toCreated: number;
  /** Job created → picked up (Redis add, worker wake-up, moveToActive). */
  toPickup: number;
  /** Picked up → finished (worker checks, thread hop, run, cache write). */
  inWorker: number;
  /** Finished → client has the result (completion event, job reload, HTTP out). */
  toClient: number;
}

const STEP_NAMES: Array<[keyof Steps, string]> = [
  ['toCreated', 'send → job created: HTTP in, validation + hashing, cache check + backlog count'],
  ['toPickup', 'created → picked up: Redis add, worker wake-up, moveToActive'],
  ['inWorker', 'picked up → finished: cancel/cache checks, thread hop, run, cache write'],
  ['toClient', 'finished → client: completion event, job reload, HTTP out'],
  ['total', 'total (client round trip)'],
];

const CENSUS_JOBS = 20;

/**
 * 3. Per-job overhead: trivial bench-sum jobs with distinct inputs through the template, against raw
 * BullMQ (`queue.add` + the same trivial processor in its own process + `waitUntilFinished`).
 */
export class OverheadScenario implements Scenario<ScenarioReport> {
  readonly name = 'overhead';
  private readonly rounds = new Rounds();
  private readonly steps: { template: Steps[]; raw: Steps[] } = { template: [], raw: [] };
  private micro?: MicroTimings;
  private census?: { template: Census; raw: Census };
  private raw?: RawBullmqClient;
  private readonly clients = new Map<number, HttpClient>();

  constructor(private readonly ctx: BenchContext) {}

  async beginPass(): Promise<void> {
    this.raw ??= await RawBullmqClient.open(this.ctx.redis.url, `${this.ctx.prefix}-raw`, this.ctx.opts.overhead.clients);
    this.ctx.progress.log(`${this.name}: warming up`);
    await this.sequential('template', 20);
    await this.sequential('raw', 20);
    this.micro ??= await microTimings(this.ctx.redisClient, this.client(1));
    if (!this.census && this.ctx.redis.own) {
      this.ctx.progress.log(`${this.name}: counting Redis commands per job (MONITOR, untimed)`);
      this.census = {
        template: await redisCensus(this.ctx.redis.url, CENSUS_JOBS, () => this.sequential('template', CENSUS_JOBS)),
        raw: await redisCensus(this.ctx.redis.url, CENSUS_JOBS, () => this.sequential('raw', CENSUS_JOBS)),
      };
    }
  }

  async round(round: number, rounds: number): Promise<void> {
    const { opts, progress } = this.ctx;
    const o = opts.overhead;
    for (const side of rotate(['template', 'raw'] as const, round)) {
      const label = side === 'template' ? 'template' : 'raw BullMQ';
      progress.step(this.name, round + 1, rounds, `${label}: ${o.clients} callers, trivial jobs for ${o.durationS} s`);
      const processes = await this.processes(side);
      const cpuBefore = processes.map(([, pid]) => cpuMs(pid));
      const run = await closedLoop({ concurrency: o.clients, durationMs: o.durationS * 1000, task: this.task(side, o.clients, false) });
      if (run.errors.length > 0) throw new Error(`${label}: ${run.errors[0]}`);
      const jobsPerS = run.results.length / (run.elapsedMs / 1000);
      this.rounds.add(`${side}.jobsPerS`, jobsPerS);
      processes.forEach(([name, pid], i) => this.rounds.add(`${side}.cpuPerJob.${name}`, (cpuMs(pid) - cpuBefore[i]) / run.results.length));

      progress.step(this.name, round + 1, rounds, `${label}: ${o.sequential} jobs one at a time`);
      const before = this.ctx.redis.own ? await redisCommandCount(this.ctx.redisClient) : NaN;
      const pool = side === 'template' ? await this.poolTime() : undefined;
      const steps = await this.sequential(side, o.sequential);
      const after = this.ctx.redis.own ? await redisCommandCount(this.ctx.redisClient) : NaN;
      if (pool) {
        const now = await this.poolTime();
        this.rounds.add('template.poolMs', ((now.sum - pool.sum) / (now.count - pool.count)) * 1000);
      }
      this.steps[side].push(...steps);
      const total = summarize(steps.map((s) => s.total));
      this.rounds.add(`${side}.p50`, total.p50);
      this.rounds.add(`${side}.p99`, total.p99);
      // why: minus the two INFO calls that measured it.
      this.rounds.add(`${side}.redisCommandsPerJob`, (after - before - 2) / steps.length);
      progress.log(`  ${label}: ${jobsPerS.toFixed(0)} jobs/s at ${o.clients} callers; alone p50 ${total.p50.toFixed(2)} ms, p99 ${total.p99.toFixed(2)} ms`);
    }
    this.rounds.add('throughputRatio', this.last('template.jobsPerS') / this.last('raw.jobsPerS'));
    this.rounds.add('p50Diff', this.last('template.p50') - this.last('raw.p50'));
  }

  /** The processes whose CPU time a side's jobs use, by name and pid. */
  private async processes(side: 'template' | 'raw'): Promise<Array<[string, number]>> {
    const { servers, redis, redisClient } = this.ctx;
    const list: Array<[string, number]> =
      side === 'template'
        ? [['API', servers.api.pid], ['worker', servers.worker.pid]]
        : [['raw worker', servers.rawWorker!.pid]];
    list.push(['bench (client)', process.pid]);
    if (redis.own) {
      const pid = Number(/process_id:(\d+)/.exec(await redisClient.info('server'))?.[1]);
      if (pid) list.push(['Redis', pid]);
    }
    return list;
  }

  /** The worker's own account of time spent on the pool (thread hop + run) for bench-sum jobs. */
  private async poolTime(): Promise<{ sum: number; count: number }> {
    const { worker } = this.ctx.servers;
    const [sum, count] = await Promise.all([
      worker.metric('nest_offload_job_run_seconds_sum', { type: 'bench-sum' }),
      worker.metric('nest_offload_job_run_seconds_count', { type: 'bench-sum' }),
    ]);
    return { sum, count };
  }

  private last(name: string): number {
    const values = this.rounds.get(name).values;
    return values[values.length - 1];
  }

  private client(sockets: number): HttpClient {
    let client = this.clients.get(sockets);
    if (!client) this.clients.set(sockets, (client = new HttpClient(this.ctx.servers.api.url, sockets)));
    return client;
  }

  /**
   * One job submitted and awaited. With `withSteps`, resolves with its step timings (for raw BullMQ
   * that costs one more read after the job, so the throughput loops go without).
   */
  private task(side: 'template' | 'raw', sockets: number, withSteps: boolean): () => Promise<Steps | undefined> {
    if (side === 'template') {
      const client = this.client(sockets);
      return async () => {
        const sent = Date.now();
        const t0 = performance.now();
        const reply = await client.json<View>('POST', '/v1/jobs/bench-sum', { json: nextTrivial(), headers: { prefer: 'wait=30' } });
        const total = performance.now() - t0;
        const received = Date.now();
        const v = reply.body;
        if (v?.status !== 'completed') throw new Error(`bench-sum job: HTTP ${reply.status}, status ${v?.status}`);
        const [created, started, finished] = [Date.parse(v.createdAt), Date.parse(v.startedAt!), Date.parse(v.finishedAt!)];
        return { total, toCreated: created - sent, toPickup: started - created, inWorker: finished - started, toClient: received - finished };
      };
    }
    const raw = this.raw!;
    return async () => {
      const sent = Date.now();
      const t0 = performance.now();
      const job = await raw.submitAndWait(nextTrivial());
      const total = performance.now() - t0;
      const received = Date.now();
      if (!withSteps) return undefined;
      const t = await raw.times(job);
      return { total, toCreated: t.timestamp - sent, toPickup: t.processedOn - t.timestamp, inWorker: t.finishedOn - t.processedOn, toClient: received - t.finishedOn };
    };
  }

  private async sequential(side: 'template' | 'raw', jobs: number): Promise<Steps[]> {
    const run = await closedLoop({ concurrency: 1, total: jobs, task: this.task(side, 1, true) });
    if (run.errors.length > 0) throw new Error(`${side} sequential: ${run.errors[0]}`);
    return run.results as Steps[];
  }

  result(): ScenarioReport {
    const r = (name: string) => this.rounds.get(name);
    const m = (name: keyof MicroTimings) => this.micro?.[name] ?? NaN;
    const clients = this.ctx.opts.overhead.clients;
    const rows: ScenarioReport['rows'] = [
      {
        scenario: '3. Per-job overhead',
        measure: `trivial jobs/s at ${clients} callers ÷ raw BullMQ`,
        template: spreadOf(r('template.jobsPerS'), (v) => perS(v, 'jobs/s')),
        baseline: spreadOf(r('raw.jobsPerS'), (v) => perS(v, 'jobs/s')),
        ratio: r('throughputRatio'),
        target: '≥ 0.3',
        met: r('throughputRatio').median >= 0.3,
      },
      {
        scenario: '3. Per-job overhead',
        measure: 'submit-and-wait latency, one caller: p50 (p99); ratio column = template p50 − raw p50',
        template: `${ms(r('template.p50').median)} (${ms(r('template.p99').median)})`,
        baseline: `${ms(r('raw.p50').median)} (${ms(r('raw.p99').median)})`,
        ratio: r('p50Diff'),
        target: '≤ +2 ms',
        met: r('p50Diff').median <= 2,
      },
    ];
    const table = (side: 'template' | 'raw') => {
      const list = this.steps[side];
      return Object.fromEntries(STEP_NAMES.map(([key]) => [key, summarize(list.map((s) => s[key]))]));
    };
    const t = table('template');
    const raw = table('raw');
    const lines = [
      '**Per-job latency by step** (one caller, all rounds; p50 / mean in ms; job timestamps are whole milliseconds, so means are the better estimate):',
      '',
      '| Step | Template p50 / mean | Raw BullMQ p50 / mean |',
      '|---|---|---|',
      ...STEP_NAMES.map(([key, label]) => `| ${label} | ${num(t[key].p50)} / ${num(t[key].mean)} | ${num(raw[key].p50)} / ${num(raw[key].mean)} |`),
      '',
      `Timed on their own (p50): HTTP round trip of a trivial route on the API ${ms(m('httpMs'))}; Redis PING ${ms(m('redisPingMs'))}; ` +
        `zod validation + content hash ${num(m('validateHashUs'))} µs; piscina thread hop with a MessagePort ${ms(m('threadHopMs'))}; ` +
        `the worker's own timing of a trivial job (nest_offload_job_run_seconds: thread hop and run) ${spreadOf(r('template.poolMs'), ms)}. ` +
        (this.ctx.redis.own
          ? `Redis commands executed per job, including those inside BullMQ's Lua scripts: template ${num(r('template.redisCommandsPerJob').median)}, raw BullMQ ${num(r('raw.redisCommandsPerJob').median)}.`
          : 'Redis commands per job: not measured (shared Redis).'),
    ];
    const cpuRows = ['API', 'worker', 'raw worker', 'Redis', 'bench (client)'].filter(
      (name) => Number.isFinite(r(`template.cpuPerJob.${name}`).median) || Number.isFinite(r(`raw.cpuPerJob.${name}`).median),
    );
    const cpuCell = (side: string, name: string) => (Number.isFinite(r(`${side}.cpuPerJob.${name}`).median) ? num(r(`${side}.cpuPerJob.${name}`).median) : '');
    const cpuTotal = (side: string) => cpuRows.reduce((sum, name) => sum + (r(`${side}.cpuPerJob.${name}`).median || 0), 0);
    lines.push(
      '',
      `**CPU per job at ${clients} callers, by process** (ms of CPU time per completed job, /proc; the bench process is the load generator):`,
      '',
      '| Process | Template | Raw BullMQ |',
      '|---|---|---|',
      ...cpuRows.map((name) => `| ${name} | ${cpuCell('template', name)} | ${cpuCell('raw', name)} |`),
      `| total | ${num(cpuTotal('template'))} | ${num(cpuTotal('raw'))} |`,
    );
    if (this.census) {
      const names = [...new Set([...Object.keys(this.census.template.perConnection), ...Object.keys(this.census.raw.perConnection)])].sort();
      const top = (c: Census, name: string) =>
        Object.entries(c.byCommand[name] ?? {})
          .sort((a, b) => b[1] - a[1])
          .slice(0, 6)
          .map(([cmd, n]) => `${cmd} ${num(n)}`)
          .join(', ');
      lines.push(
        '',
        `**Redis round trips per job, by connection** (MONITOR, ${CENSUS_JOBS} sequential jobs each; commands inside Lua scripts counted apart):`,
        '',
        '| Connection | Template: commands/job (top commands) | Raw BullMQ: commands/job (top commands) |',
        '|---|---|---|',
        ...names.map((name) => {
          const cell = (c: Census) => (c.perConnection[name] ? `${num(c.perConnection[name])} (${top(c, name)})` : '');
          return `| ${name} | ${cell(this.census!.template)} | ${cell(this.census!.raw)} |`;
        }),
        `| inside Lua scripts | ${num(this.census.template.insideScripts)} | ${num(this.census.raw.insideScripts)} |`,
      );
    }
    return {
      key: 'overhead',
      title: 'Per-job overhead',
      rows,
      chart: {
        throughput: {
          title: `3. Per-job: trivial jobs/s, ${clients} callers`,
          unit: 'jobs/s',
          bars: [
            { label: 'template', value: r('template.jobsPerS').median, template: true },
            { label: 'raw BullMQ', value: r('raw.jobsPerS').median, template: false },
          ],
        },
        latency: {
          title: '3. Per-job: p99, one caller',
          unit: 'ms',
          bars: [
            { label: 'template', value: r('template.p99').median, template: true },
            { label: 'raw BullMQ', value: r('raw.p99').median, template: false },
          ],
        },
      },
      sections: [lines.join('\n')],
      data: { ...this.rounds.all(), steps: { template: t, raw }, micro: this.micro, census: this.census },
    };
  }

  async close(): Promise<void> {
    for (const client of this.clients.values()) client.close();
    await this.raw?.close();
  }
}
