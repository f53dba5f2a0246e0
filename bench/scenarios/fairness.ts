import { randomBytes } from 'node:crypto';
import { fairKey, queuePrefix } from '../../libs/queue/src/queue.keys';
import type { AppProcess } from '../../test/support/apps';
import { BENCH_API_KEY } from '../load/api-key';
import { closedLoop, HttpClient } from '../load/http-client';
import { num, perS, ratio, spreadOf } from '../report/format';
import type { Row, ScenarioReport } from '../report/report.types';
import { benchJobs } from '../support/bench-jobs';
import { Env, redisCommandCalls, redisServerPid, startTemplateApp } from '../support/stack';
import { Rounds, round2, type Spread } from '../support/stats';
import { schedCounters, untilQuiet } from '../tuning/sched-counters';
import { BenchContext, fresh, nextTrivial, rotate, Scenario, sleep } from './context';

/** on: the scenario's keys (fair share on); off: no keys (one caller, one FIFO); one: one key and no per-key limit (keys on, fair share not engaged; cost legs only). */
type Side = 'on' | 'off' | 'one';
/** What one cost leg did and cost: jobs, wall time, CPU ms of the side's API, the worker and Redis (own server), Redis calls by command. */
interface CostLeg {
  jobs: number;
  elapsedMs: number;
  cpu: { api: number; worker: number; redis: number };
  calls: Map<string, number>;
}
interface Caller {
  name: string;
  key: string;
}
interface Reply {
  id?: string;
  status?: string;
  code?: string;
}

const SCENARIO = '13. Fairness';
const PBKDF2 = benchJobs.pbkdf2;
const QUEUE = PBKDF2.queue;
const caller = (name: string): Caller => ({ name, key: randomBytes(24).toString('base64url') });

/** Jain's fairness index of `xs`: 1 when all are equal, 1/n when one has everything. */
export function jain(xs: readonly number[]): number {
  const sum = xs.reduce((a, b) => a + b, 0);
  const squares = xs.reduce((a, b) => a + b * b, 0);
  return squares === 0 ? NaN : (sum * sum) / (xs.length * squares);
}

/** The most of `intervals` ([start, end), ms) that overlap at any instant. */
export function maxOverlap(intervals: ReadonlyArray<readonly [number, number]>): number {
  const edges = intervals.flatMap(([start, end]) => [[start, 1] as const, [end, -1] as const]);
  // why ends first at equal times: a job that ends at the millisecond another starts did not overlap it.
  edges.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let now = 0;
  let most = 0;
  for (const [, step] of edges) most = Math.max(most, (now += step));
  return most;
}

/** The most callers a leg uses (`fairness.callers` takes the first ones). */
const MAX_CALLERS = 20;

/** The API keys of the scenario's callers, made once per run like the bench's own key (load/api-key.ts). */
const CALLERS = {
  a: caller('fair-a'),
  b: caller('fair-b'),
  share: Array.from({ length: MAX_CALLERS }, (_, i) => caller(`fair-share-${i + 1}`)),
  capped: Array.from({ length: MAX_CALLERS }, (_, i) => caller(`fair-cap-${i + 1}`)),
  cost: Array.from({ length: 8 }, (_, i) => caller(`fair-cost-${i + 1}`)),
  faults: [caller('fair-fault-a'), caller('fair-fault-b')],
};
/** The one key of the cost legs' third side (an API of its own: one key, no per-key limit). */
const ONE = caller('fair-one');

/** The env that gives an API the scenario's keys (fair share on), the capped ones with concurrency 1. */
function fairnessKeyEnv(): Env {
  return {
    API_KEYS: Object.values(CALLERS).flat().map((c) => `${c.name}=${c.key}`).join(','),
    CALLER_LIMITS: CALLERS.capped.map((c) => `${c.name}:concurrency=1`).join(','),
  };
}

/**
 * 13. Fairness between callers (fair share, libs/queue/src/fair-share.ts), side by side: an API with
 * API keys (fair share on) and one without (off: one caller, one FIFO) on the run's prefix, in front
 * of the run's worker (BENCH_THREADS threads), and a second worker for the cap and fault legs. In
 * smoke mode it starts nothing: the "on" legs run on the run's API, every caller with the bench's
 * one key (one key and no per-key limit: fair share does not engage, so only the legs' code is
 * exercised, not fair share), and the "off" legs not at all.
 * - starvation: caller A queues `aJobs` ~`jobMs` pbkdf2 jobs, then B submits `bJobs`, one at a time
 *   (the next once the last started): B's latest start after its submission, in A's job durations
 *   (A's rest is cancelled once B's last job started);
 * - share: `callers` callers, caller i on 1 + (i mod 4) connections, each submitting the next ~25 ms
 *   job (Prefer: wait) as soon as the last completes, for `shareS`: Jain's index of the jobs each
 *   completed in that time;
 * - cap: `callers` keys with concurrency=1 (CALLER_LIMITS) the same way for `capS`, on 2 workers: the
 *   most running at once per key, sampled every 100 ms from BullMQ's active list, and exactly from
 *   every job's start and end;
 * - cost: trivial bench-sum jobs/s (Prefer: wait, 8 keys) on ÷ off, in legs of `costS` alternating
 *   on, off and a third API with one key (fair share not engaged: what the keys cost without it) as
 *   A B C C B A (the order turned each round), each once the processes are quiet, a round's figures
 *   from its two legs a side; with the CPU ms per job of the side's API, the worker and Redis
 *   (schedstat) and Redis commands per job, in all and by command (the run's own redis-server only);
 * - faults: two callers flood for `faultS` while the second worker is killed (SIGKILL) every
 *   `killEveryMs` and started again: every accepted job completes, both callers' running and
 *   waiting counts are 0 once the queue drains.
 */
export class FairnessScenario implements Scenario<ScenarioReport> {
  readonly name = 'fairness';
  private readonly rounds = new Rounds();
  private readonly callers = CALLERS;
  private apis?: Partial<Record<Side, AppProcess>>;
  private clients?: Partial<Record<Side, HttpClient>>;
  private second?: AppProcess;
  private readonly faults: Array<{ accepted: number; completed: number; failed: number; missing: number; kills: number; drainMs: number; countsAtDrain: string }> = [];
  /** Redis calls by command over every measured cost leg, and the jobs they served, per side. */
  private readonly costCalls: Record<Side, { jobs: number; calls: Map<string, number> }> = { on: { jobs: 0, calls: new Map() }, off: { jobs: 0, calls: new Map() }, one: { jobs: 0, calls: new Map() } };
  private redisPid?: number;

  constructor(private readonly ctx: BenchContext) {}

  /** The sides measured: both, or in smoke mode only "on" (the run's API). */
  private get sides(): Side[] {
    return this.ctx.opts.smoke ? ['on'] : ['on', 'off'];
  }

  /** The sides of the cost legs: those, and one key without fair share, which tells what fair share costs from what API keys cost. */
  private get costSides(): Side[] {
    return this.ctx.opts.smoke ? this.sides : [...this.sides, 'one'];
  }

  async beginPass(): Promise<void> {
    if (this.clients) return;
    const { opts, templateEnv, progress, servers } = this.ctx;
    if (opts.smoke) {
      this.clients = { on: new HttpClient(servers.api.url) };
      return;
    }
    const on: Env = { ...templateEnv, ...fairnessKeyEnv() };
    const off: Env = { ...templateEnv, API_KEYS: '', ALLOW_UNAUTHENTICATED: 'true' };
    const one: Env = { ...templateEnv, API_KEYS: `${ONE.name}=${ONE.key}` };
    const withOne = this.o.legs.includes('cost');
    progress.log(`${this.name}: starting an API with the scenario's keys (fair share on), one without (off)${withOne ? ' and one with a single key (fair share not engaged)' : ''}, in front of the run's worker`);
    const start = (env: Env) => startTemplateApp(opts.dist, 'api', env, { cwd: opts.root, nodeArgs: opts.nodeArgs });
    const [onApi, offApi, oneApi] = await Promise.all([start(on), start(off), withOne ? start(one) : undefined]);
    this.apis = { on: onApi, off: offApi, one: oneApi };
    this.redisPid = await redisServerPid(this.ctx.redis, this.ctx.redisClient);
    this.clients = { on: new HttpClient(onApi.url), off: new HttpClient(offApi.url), ...(oneApi && { one: new HttpClient(oneApi.url) }) };
  }

  /** Each caller's jobs waiting and released-not-finished in the queue, read from fair share's keys. */
  private async counts(names: readonly string[]): Promise<Array<{ caller: string; waiting: number; running: number }>> {
    const key = (part: string) => fairKey(this.ctx.prefix, QUEUE, part);
    const pipeline = this.ctx.redisClient.pipeline();
    for (const name of names) pipeline.zcard(key(`waiting:${name}`)).scard(key(`running:${name}`));
    const replies = ((await pipeline.exec()) ?? []).map(([error, n]) => (error ? NaN : Number(n)));
    return names.map((name, i) => ({ caller: name, waiting: replies[2 * i], running: replies[2 * i + 1] }));
  }

  private get o() {
    return this.ctx.opts.fairness;
  }

  /** The key `who` sends, none on the API without keys; in smoke mode the bench's own (the run's API has no other). */
  private as(side: Side, who: Caller): Record<string, string> {
    if (side === 'off') return {};
    if (side === 'one') return { 'x-api-key': ONE.key };
    return { 'x-api-key': this.ctx.opts.smoke ? BENCH_API_KEY : who.key };
  }

  /** The key name fair share counts `who` under. */
  private nameOf(who: Caller): string {
    return this.ctx.opts.smoke ? 'bench' : who.name;
  }

  async round(round: number, rounds: number): Promise<void> {
    const step = (what: string) => this.ctx.progress.step(this.name, round + 1, rounds, what);
    const legs = new Set(this.o.legs);
    const last = (name: string) => this.rounds.get(name).values.at(-1)!;
    const both = this.sides.length > 1;
    if (legs.has('starvation')) {
      for (const side of rotate(this.sides, round)) {
        step(`starvation, fair share ${side}: A queues ${this.o.aJobs} ~${this.o.jobMs} ms jobs, then B ${this.o.bJobs}`);
        await this.starvation(side);
      }
      if (both) this.rounds.add('starvation.ratio', last('starvation.on.worstMs') / last('starvation.off.worstMs'));
    }
    if (legs.has('share')) {
      for (const side of rotate(this.sides, round)) {
        step(`share, fair share ${side}: ${this.o.callers} callers for ${this.o.shareS} s`);
        await this.share(side);
      }
      if (both) this.rounds.add('share.jobsRatio', last('share.on.jobs') / last('share.off.jobs'));
    }
    if (legs.has('cost')) {
      // why a warm-up in the first round of a full run: jobs/s of a cold API and worker grows over its first seconds (JIT, pools).
      if (round === 0 && !this.ctx.opts.smoke) for (const side of this.costSides) await this.cost(side);
      // why A B C C B A: a host whose load drifts during the round weighs on every side alike.
      const order = rotate(this.costSides, round);
      const runs = new Map<Side, CostLeg[]>();
      for (const side of [...order, ...[...order].reverse()]) {
        step(`cost, fair share ${side}: trivial jobs/s`);
        runs.set(side, [...(runs.get(side) ?? []), await this.cost(side)]);
      }
      for (const [side, legsRun] of runs) this.addCost(side, legsRun);
      if (both) {
        this.rounds.add('costRatio', last('cost.on.perS') / last('cost.off.perS'));
        this.rounds.add('commandsRatio', last('cost.on.commands') / last('cost.off.commands'));
        this.rounds.add('cpuRatio', last('cost.on.cpu.fleet') / last('cost.off.cpu.fleet'));
        this.rounds.add('oneRatio', last('cost.one.perS') / last('cost.off.perS'));
        this.rounds.add('onOneRatio', last('cost.on.perS') / last('cost.one.perS'));
        this.rounds.add('onOneCpuRatio', last('cost.on.cpu.fleet') / last('cost.one.cpu.fleet'));
      }
    }
    if (!legs.has('cap') && !legs.has('faults')) return;
    if (this.o.workers > 1) this.second = await this.startWorker();
    try {
      if (legs.has('cap')) {
        step(`cap: ${this.o.callers} keys with concurrency=1 for ${this.o.capS} s on ${this.o.workers} worker(s)`);
        await this.cap();
      }
      if (legs.has('faults')) {
        step(`faults: two callers for ${this.o.faultS} s${this.o.killEveryMs > 0 ? `, the second worker killed every ${this.o.killEveryMs / 1000} s` : ''}`);
        await this.faultLeg();
      }
    } finally {
      await this.second?.stop();
      this.second = undefined;
    }
  }

  /** A second worker on the run's prefix; its lock is short, so a job it held when killed runs again within seconds. */
  private startWorker(): Promise<AppProcess> {
    const { opts, templateEnv } = this.ctx;
    return startTemplateApp(opts.dist, 'worker', { ...templateEnv, JOB_LOCK_MS: '2000' }, { cwd: opts.root, nodeArgs: opts.nodeArgs });
  }

  private jobKey(id: string): string {
    return `${queuePrefix(this.ctx.prefix, QUEUE)}:${QUEUE}:${id}`;
  }

  /** Fields of each job of `ids` (undefined where the job or the field is missing). */
  private async fields(ids: readonly string[], ...names: string[]): Promise<Array<Array<string | null>>> {
    const out: Array<Array<string | null>> = [];
    for (let i = 0; i < ids.length; i += 500) {
      const pipeline = this.ctx.redisClient.pipeline();
      for (const id of ids.slice(i, i + 500)) pipeline.hmget(this.jobKey(id), ...names);
      for (const [error, values] of (await pipeline.exec()) ?? []) out.push(error ? names.map(() => null) : (values as Array<string | null>));
    }
    return out;
  }

  private async post(side: Side, who: Caller, input: unknown, type: string = PBKDF2.name, waitS = 0): Promise<{ status: number; body: Reply }> {
    return this.clients![side]!.json<Reply>('POST', `/v1/jobs/${type}`, { json: input, headers: { ...this.as(side, who), ...(waitS > 0 ? { prefer: `wait=${waitS}` } : {}) } });
  }

  private pbkdf2(ms: number) {
    return { salt: fresh(), iterations: this.ctx.iterationsFor(ms) };
  }

  /** Waits until each job of `ids` has `field` set or is gone; resolves with the values (NaN where gone). */
  private async until(ids: readonly string[], field: string, what: string, timeoutMs = 180_000): Promise<number[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const rows = await this.fields(ids, field, 'timestamp');
      if (rows.every(([value, timestamp]) => value !== null || timestamp === null)) return rows.map(([value]) => (value === null ? NaN : Number(value)));
      if (Date.now() > deadline) throw new Error(`${this.name}: ${what}: ${rows.filter(([v, t]) => v === null && t !== null).length} of ${ids.length} jobs without ${field} after ${timeoutMs / 1000} s`);
      await sleep(20);
    }
  }

  private async starvation(side: Side): Promise<void> {
    const { a, b } = this.callers;
    const loop = await closedLoop({
      concurrency: 16,
      total: this.o.aJobs,
      task: async () => {
        const reply = await this.post(side, a, this.pbkdf2(this.o.jobMs));
        if (reply.status !== 202 || !reply.body.id) throw new Error(`A's submission: HTTP ${reply.status} ${JSON.stringify(reply.body)}`);
        return reply.body.id;
      },
    });
    if (loop.errors.length > 0) throw new Error(`${this.name}: starvation: ${loop.errors[0]}`);
    const aIds = loop.results;
    // B is the small caller: one job waiting at a time, the next submitted once the last started.
    const bIds: string[] = [];
    const delays: number[] = [];
    for (let i = 0; i < this.o.bJobs; i++) {
      const submitted = Date.now();
      const reply = await this.post(side, b, this.pbkdf2(this.o.jobMs));
      if (reply.status !== 202 || !reply.body.id) throw new Error(`${this.name}: B's submission: HTTP ${reply.status} ${JSON.stringify(reply.body)}`);
      bIds.push(reply.body.id);
      const [start] = await this.until([reply.body.id], 'processedOn', "B's job started", 900_000);
      delays.push(start - submitted);
    }
    // A's jobs still waiting are cancelled: they would only take time.
    await closedLoop({ concurrency: 16, total: aIds.length, task: (i) => this.clients![side]!.send('DELETE', `/v1/jobs/${aIds[i]}`, { headers: this.as(side, a) }) });
    await this.until([...aIds, ...bIds], 'finishedOn', 'the starvation jobs ended');
    const runs = (await this.fields(aIds, 'processedOn', 'finishedOn', 'failedReason')).filter(([start, end, failed]) => start && end && !failed).map(([start, end]) => Number(end) - Number(start));
    const jobMs = runs.sort((x, y) => x - y)[runs.length >> 1];
    const worst = Math.max(...delays);
    this.rounds.add(`starvation.${side}.jobMs`, jobMs);
    this.rounds.add(`starvation.${side}.worstMs`, worst);
    this.rounds.add(`starvation.${side}.durations`, worst / jobMs);
    this.ctx.progress.log(`  B's latest start ${Math.round(worst)} ms after its submission (${num(worst / jobMs)} of A's ~${num(jobMs)} ms jobs; ${runs.length} of A's ran)`);
  }

  /**
   * Callers on 1 + (i mod 4) connections each, submitting the next job as soon as the last completes,
   * for `seconds`; resolves with the jobs each completed in that time and the ids of all.
   */
  private async flood(side: Side, callers: readonly Caller[], seconds: number, during?: () => Promise<void>): Promise<{ completed: number[]; ids: string[][] }> {
    const end = Date.now() + seconds * 1000;
    const completed = callers.map(() => 0);
    const ids: string[][] = callers.map(() => []);
    const jobMs = this.ctx.opts.cpuJobMs;
    const connections = callers.flatMap((_, i) => Array.from({ length: 1 + (i % 4) }, () => i));
    const loops = connections.map(async (i) => {
      while (Date.now() < end) {
        const reply = await this.post(side, callers[i], this.pbkdf2(jobMs), PBKDF2.name, 60);
        if (reply.body?.id) ids[i].push(reply.body.id);
        if (reply.body?.status !== 'completed') throw new Error(`${this.name}: ${callers[i].name}'s job: HTTP ${reply.status} ${JSON.stringify(reply.body)}`);
        if (Date.now() <= end) completed[i]++;
      }
    });
    await Promise.all([...loops, during?.()]);
    return { completed, ids };
  }

  private async share(side: Side): Promise<void> {
    const { completed } = await this.flood(side, this.callers.share.slice(0, this.o.callers), this.o.shareS);
    const index = jain(completed);
    this.rounds.add(`share.${side}.jain`, index);
    this.rounds.add(`share.${side}.jobs`, completed.reduce((x, y) => x + y, 0));
    this.ctx.progress.log(`  Jain index ${num(index)}; jobs completed per caller (1-4 connections): ${completed.join(' ')}`);
  }

  /** The capped keys flood; BullMQ's active list is sampled every 100 ms meanwhile, and every job's run read afterwards. */
  private async cap(): Promise<void> {
    const active = `${queuePrefix(this.ctx.prefix, QUEUE)}:${QUEUE}:active`;
    let sampled = 0;
    let samples = 0;
    let stop = false;
    const sample = async () => {
      while (!stop) {
        const ids = await this.ctx.redisClient.lrange(active, 0, -1);
        const perCaller = new Map<string, number>();
        for (const [data] of await this.fields(ids, 'data')) {
          const who = data ? (JSON.parse(data) as { caller?: string }).caller : undefined;
          if (who) perCaller.set(who, (perCaller.get(who) ?? 0) + 1);
        }
        sampled = Math.max(sampled, ...perCaller.values());
        samples++;
        await sleep(100);
      }
    };
    const sampler = sample();
    const { ids } = await this.flood('on', this.callers.capped.slice(0, this.o.callers), this.o.capS).finally(() => (stop = true));
    await sampler;
    let exact = 0;
    for (const own of ids) {
      const runs = (await this.fields(own, 'processedOn', 'finishedOn')).map(([start, end]) => [Number(start), Number(end)] as const);
      exact = Math.max(exact, maxOverlap(runs));
    }
    this.rounds.add('cap.sampled', sampled);
    this.rounds.add('cap.samples', samples);
    this.rounds.add('cap.exact', exact);
    this.rounds.add('cap.jobs', ids.flat().length);
    this.ctx.progress.log(`  most running at once per key: ${sampled} in ${samples} samples, ${exact} from the jobs' own start and end (${ids.flat().length} jobs)`);
  }

  /** The CPU ms so far of the side's API, the worker and Redis (NaN without the run's own redis-server), and Redis's calls by command. */
  private async costCounters(side: Side): Promise<Omit<CostLeg, 'jobs' | 'elapsedMs'>> {
    const cpu = (pid: number | undefined) => (pid ? schedCounters(pid).cpuMs : NaN);
    // why no API pid in smoke mode: the run's API serves it, and its pid is the run's.
    const api = this.apis?.[side] ?? this.ctx.servers.api;
    return {
      cpu: { api: cpu(api.pid), worker: cpu(this.ctx.servers.worker.pid), redis: cpu(this.redisPid) },
      calls: this.redisPid ? await redisCommandCalls(this.ctx.redisClient) : new Map(),
    };
  }

  /** One leg of trivial jobs on `side` for `costS`, started once the processes are quiet: what it did and cost. */
  private async cost(side: Side): Promise<CostLeg> {
    const keys = this.callers.cost;
    const api = this.apis?.[side] ?? this.ctx.servers.api;
    await untilQuiet([api.pid, this.ctx.servers.worker.pid, ...(this.redisPid ? [this.redisPid] : [])]);
    const before = await this.costCounters(side);
    const loop = await closedLoop({
      concurrency: this.o.costConnections,
      durationMs: this.o.costS * 1000,
      task: async (i) => {
        const reply = await this.post(side, keys[i % keys.length], nextTrivial(), benchJobs.sum.name, 30);
        if (reply.body?.status !== 'completed') throw new Error(`HTTP ${reply.status} ${JSON.stringify(reply.body)}`);
      },
    });
    if (loop.errors.length > 0) throw new Error(`${this.name}: cost: ${loop.errors[0]}`);
    // why after a pause: the settle a job's end sends is not awaited by anyone.
    await sleep(200);
    const after = await this.costCounters(side);
    const calls = new Map([...after.calls].map(([name, n]) => [name, n - (before.calls.get(name) ?? 0)]));
    // why minus 1: the INFO that read the calls after the leg is one of them.
    if (calls.has('info')) calls.set('info', calls.get('info')! - 1);
    const cpu = { api: after.cpu.api - before.cpu.api, worker: after.cpu.worker - before.cpu.worker, redis: after.cpu.redis - before.cpu.redis };
    const jobs = loop.results.length;
    const commands = this.redisPid ? [...calls.values()].reduce((a, b) => a + b, 0) / jobs : NaN;
    this.ctx.progress.log(
      `  ${num(jobs / (loop.elapsedMs / 1000))} jobs/s; CPU ms per job: API ${num(cpu.api / jobs)}, worker ${num(cpu.worker / jobs)}, Redis ${num(cpu.redis / jobs)}` +
        `${this.redisPid ? `; ${num(commands)} Redis commands per job` : ''}`,
    );
    return { jobs, elapsedMs: loop.elapsedMs, cpu, calls };
  }

  /** A round's figures of `side` from its cost legs: jobs/s over their time, CPU ms and Redis commands per job. */
  private addCost(side: Side, legs: readonly CostLeg[]): void {
    const jobs = legs.reduce((sum, leg) => sum + leg.jobs, 0);
    const sum = (of: (leg: CostLeg) => number) => legs.reduce((total, leg) => total + of(leg), 0);
    const cpu = { api: sum((l) => l.cpu.api) / jobs, worker: sum((l) => l.cpu.worker) / jobs, redis: sum((l) => l.cpu.redis) / jobs };
    const calls = this.costCalls[side];
    calls.jobs += jobs;
    for (const leg of legs) for (const [name, n] of leg.calls) calls.calls.set(name, (calls.calls.get(name) ?? 0) + n);
    this.rounds.add(`cost.${side}.perS`, jobs / (sum((l) => l.elapsedMs) / 1000));
    this.rounds.add(`cost.${side}.commands`, this.redisPid ? sum((l) => [...l.calls.values()].reduce((a, b) => a + b, 0)) / jobs : NaN);
    this.rounds.add(`cost.${side}.cpu.api`, cpu.api);
    this.rounds.add(`cost.${side}.cpu.worker`, cpu.worker);
    this.rounds.add(`cost.${side}.cpu.redis`, cpu.redis);
    this.rounds.add(`cost.${side}.cpu.fleet`, cpu.api + cpu.worker + (this.redisPid ? cpu.redis : 0));
  }

  /** Redis calls per job by command over every measured cost leg, on, one key and off, the largest differences on − off first. */
  private callsByCommand(): Array<{ command: string; on: number; one: number; off: number }> {
    const per = (side: Side, name: string) => (this.costCalls[side].calls.get(name) ?? 0) / this.costCalls[side].jobs;
    const names = new Set(Object.values(this.costCalls).flatMap((side) => [...side.calls.keys()]));
    return [...names]
      .map((command) => ({ command, on: per('on', command), one: per('one', command), off: per('off', command) }))
      .filter((row) => row.on >= 0.05 || row.off >= 0.05 || row.one >= 0.05)
      .sort((a, b) => Math.abs(b.on - b.off) - Math.abs(a.on - a.off) || b.on - a.on);
  }

  private async faultLeg(): Promise<void> {
    const callers = this.callers.faults;
    const end = Date.now() + this.o.faultS * 1000;
    let kills = 0;
    // Kills at every tick of `killEveryMs`; a worker still starting from the last kill is killed as soon as it is up.
    const killer = async () => {
      if (!this.second || this.o.killEveryMs <= 0) return;
      let current: Promise<AppProcess> = Promise.resolve(this.second);
      const first = Date.now();
      try {
        for (let tick = 1; first + tick * this.o.killEveryMs <= end; tick++) {
          await sleep(first + tick * this.o.killEveryMs - Date.now());
          const worker = await current;
          worker.signal('SIGKILL');
          await worker.exited;
          kills++;
          current = this.startWorker();
        }
      } finally {
        this.second = await current;
      }
    };
    // why Prefer: wait=5: a job the kill caught answers queued or running after 5 s; its end is read below.
    const accepted: string[] = [];
    const loops = callers.flatMap((who) =>
      Array.from({ length: 4 }, async () => {
        while (Date.now() < end) {
          const reply = await this.post('on', who, this.pbkdf2(this.ctx.opts.cpuJobMs), PBKDF2.name, 5);
          if (reply.status >= 400 || !reply.body?.id) throw new Error(`${this.name}: faults: HTTP ${reply.status} ${JSON.stringify(reply.body)}`);
          accepted.push(reply.body.id);
        }
      }),
    );
    await Promise.all([...loops, killer()]);
    const t0 = Date.now();
    const rows = await this.until(accepted, 'finishedOn', 'the fault leg drained', 120_000).then(() => this.fields(accepted, 'finishedOn', 'failedReason', 'timestamp'));
    // why a wait: the heal (every 2 s per worker) settles a job whose worker was killed after its end.
    const names = [...new Set(callers.map((c) => this.nameOf(c)))];
    let shares = await this.counts(names);
    const deadline = Date.now() + 30_000;
    while (shares.some((s) => s.running + s.waiting !== 0) && Date.now() < deadline) {
      await sleep(50);
      shares = await this.counts(names);
    }
    const figures = {
      accepted: accepted.length,
      completed: rows.filter(([finished, failed]) => finished && !failed).length,
      failed: rows.filter(([, failed]) => failed).length,
      missing: rows.filter(([, , timestamp]) => !timestamp).length,
      kills,
      drainMs: Date.now() - t0,
      countsAtDrain: shares.map((s) => `${s.caller} running ${s.running} waiting ${s.waiting}`).join(', '),
    };
    this.faults.push(figures);
    this.rounds.add('faults.lost', figures.accepted - figures.completed);
    this.rounds.add('faults.left', shares.reduce((sum, s) => sum + s.running + s.waiting, 0));
    this.ctx.progress.log(`  ${figures.accepted} accepted, ${figures.completed} completed, ${figures.failed} failed, ${figures.missing} gone; ${kills} kills; ${figures.countsAtDrain}`);
  }

  result(): ScenarioReport {
    const r = (name: string) => this.rounds.get(name);
    // why: a ratio needs both sides, which smoke mode does not run.
    const measured = (s: Spread) => (Number.isFinite(s.median) ? s : undefined);
    const o = this.o;
    const ms = (n: number) => `${num(n)} ms`;
    const durations = (n: number) => `${num(n)} job durations`;
    const every = (name: string) => r(name).values.map((v) => num(v)).join(', ');
    const cpuOf = (side: Side) => (['api', 'worker', 'redis'] as const).map((p) => spreadOf(r(`cost.${side}.cpu.${p}`), num)).join(' · ');
    const byCommand = this.callsByCommand();
    const rows: Row[] = [
      {
        scenario: SCENARIO,
        measure: `starvation: B's latest start after its submission (${o.bJobs} jobs one at a time, behind A's ${o.aJobs} ~${o.jobMs} ms jobs, ${this.ctx.opts.threads} threads), in A's job durations; fair share on ÷ off`,
        template: `on ${spreadOf(r('starvation.on.durations'), durations)} (${ms(r('starvation.on.worstMs').median)})`,
        baseline: `off ${spreadOf(r('starvation.off.durations'), durations)} (${ms(r('starvation.off.worstMs').median)})`,
        ratio: measured(r('starvation.ratio')),
        target: 'on ≤ 3 job durations',
        met: r('starvation.on.durations').values.every((v) => v <= 3),
      },
      {
        scenario: SCENARIO,
        measure: `share: Jain index of jobs completed per caller, ${o.callers} callers on 1-4 connections each for ${o.shareS} s (~${this.ctx.opts.cpuJobMs} ms jobs); fair share on vs off`,
        template: `on ${spreadOf(r('share.on.jain'), num)} (${num(r('share.on.jobs').median)} jobs)`,
        baseline: `off ${spreadOf(r('share.off.jain'), num)} (${num(r('share.off.jobs').median)} jobs)`,
        target: 'on ≥ 0.95',
        met: r('share.on.jain').values.every((v) => v >= 0.95),
      },
      {
        scenario: SCENARIO,
        measure: `share: ~${this.ctx.opts.cpuJobMs} ms jobs the same callers completed in ${o.shareS} s, fair share on ÷ off`,
        template: `on ${spreadOf(r('share.on.jobs'), num)}`,
        baseline: `off ${spreadOf(r('share.off.jobs'), num)}`,
        ratio: measured(r('share.jobsRatio')),
      },
      {
        scenario: SCENARIO,
        measure: `cap: most jobs running at once per key with concurrency=1, ${o.callers} keys for ${o.capS} s on ${o.workers} worker(s): sampled every 100 ms · from every job's start and end`,
        template: `${every('cap.sampled')} · ${every('cap.exact')} (${num(r('cap.jobs').median)} jobs, ${num(r('cap.samples').median)} samples)`,
        baseline: '',
        target: '1',
        met: [...r('cap.sampled').values, ...r('cap.exact').values].every((v) => v <= 1),
      },
      {
        scenario: SCENARIO,
        measure: `cost: trivial jobs/s, ${o.costConnections} connections (Prefer: wait), fair share on (8 keys) ÷ off`,
        template: `on ${spreadOf(r('cost.on.perS'), (n) => perS(n, 'jobs/s'))}`,
        baseline: `off ${spreadOf(r('cost.off.perS'), (n) => perS(n, 'jobs/s'))}`,
        ratio: measured(r('costRatio')),
        target: '≥ 0.9',
        met: measured(r('costRatio')) && r('costRatio').median >= 0.9,
      },
      {
        scenario: SCENARIO,
        measure: `cost: the same, one API key and no per-key limit (keys on, fair share not engaged) ÷ off · on ÷ one key (fair share's own cost)`,
        template: `one key ${spreadOf(r('cost.one.perS'), (n) => perS(n, 'jobs/s'))}`,
        baseline: `on ÷ one key ${ratio(r('onOneRatio'))}`,
        ratio: measured(r('oneRatio')),
      },
      {
        scenario: SCENARIO,
        measure: this.ctx.redis.own ? 'cost: Redis commands per trivial job, those run inside scripts included (INFO commandstats), fair share on vs off' : 'cost: Redis commands per job (only counted on the run\'s own redis-server)',
        template: `on ${spreadOf(r('cost.on.commands'), num)} · one key ${spreadOf(r('cost.one.commands'), num)}`,
        baseline: `off ${spreadOf(r('cost.off.commands'), num)}`,
      },
      {
        scenario: SCENARIO,
        measure: `cost: CPU ms per trivial job (schedstat) of the side's API · the worker · Redis${this.redisPid ? '' : ' (own redis-server only)'}; fleet (their sum) on ÷ off, and on ÷ one key`,
        template: `on ${cpuOf('on')} · one key ${cpuOf('one')}`,
        baseline: `off ${cpuOf('off')}`,
        ratio: measured(r('cpuRatio')),
        target: `on ÷ one key ${ratio(r('onOneCpuRatio'))}`,
      },
      {
        scenario: SCENARIO,
        measure: `faults: two callers for ${o.faultS} s${o.killEveryMs > 0 ? `, a worker killed (SIGKILL) every ${o.killEveryMs / 1000} s` : ' (smoke: no kill)'}: accepted jobs not completed · callers' running + waiting once drained`,
        template: `${every('faults.lost')} · ${every('faults.left')}`,
        baseline: '',
        target: '0 · 0',
        met: [...r('faults.lost').values, ...r('faults.left').values].every((v) => v === 0),
      },
    ];
    return {
      key: 'fairness',
      title: 'Fairness between callers',
      // why: a leg BENCH_FAIRNESS_LEGS left out has no figures, and its target would show as met. Each measure names its leg first.
      rows: rows.filter((row) => o.legs.includes(row.measure.split(':')[0])),
      chart: {
        latency: {
          title: `${SCENARIO}: B's latest start behind A's ${o.aJobs} jobs`,
          unit: 'ms',
          bars: [
            { label: 'fair share on', value: r('starvation.on.worstMs').median, template: true },
            { label: 'off (one FIFO)', value: r('starvation.off.worstMs').median, template: false },
          ],
        },
      },
      sections: [
        `Fairness: starvation on ÷ off ${ratio(r('starvation.ratio'))}; Jain on ${every('share.on.jain')}, off ${every('share.off.jain')}; ` +
          `trivial jobs/s on ÷ off ${ratio(r('costRatio'))}, fleet CPU per job on ÷ off ${ratio(r('cpuRatio'))}, Redis commands per job on ÷ off ${ratio(r('commandsRatio'))}; ` +
          `fault legs: ${this.faults.map((f) => `${f.accepted} accepted, ${f.completed} completed, ${f.failed} failed, ${f.kills} kills, drained in ${round2(f.drainMs / 1000)} s (${f.countsAtDrain})`).join('; ')}.`,
        ...(byCommand.length > 0 && this.costCalls.off.jobs > 0
          ? [`Fairness, cost legs: Redis calls per trivial job by command (INFO commandstats; a script's own commands under their names), on · one key · off, the largest differences on − off first: ${byCommand.map((c) => `${c.command} ${num(c.on)} · ${num(c.one)} · ${num(c.off)}`).join(', ')}.`]
          : []),
      ],
      data: { ...this.rounds.all(), faults: this.faults, costCallsPerJob: byCommand },
    };
  }

  async close(): Promise<void> {
    this.clients?.on?.close();
    this.clients?.off?.close();
    this.clients?.one?.close();
    await Promise.all([this.apis?.on?.stop(), this.apis?.off?.stop(), this.apis?.one?.stop(), this.second?.stop()]);
    this.apis = undefined;
    this.clients = undefined;
  }
}
