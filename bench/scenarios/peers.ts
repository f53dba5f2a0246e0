import { join } from 'node:path';
import type { AppProcess } from '../../test/support/apps';
import { BENCH_API_KEY, sendKeyTo } from '../load/api-key';
import { blast, BlastResult } from '../load/blast';
import { closedLoop, HttpClient } from '../load/http-client';
import { Saturator } from '../load/saturator';
import { ms, num } from '../report/format';
import type { ScenarioReport } from '../report/report.types';
import { park, readMetric, redisCommandCount, redisServerPid, resume, startNode, startTemplateApp } from '../support/stack';
import { Rounds, summarize } from '../support/stats';
import { childrenOf, hostCpu, HostCpu, hostCpuShares } from '../support/host-cpu';
import { SchedCounters, schedCounters, untilQuiet } from '../tuning/sched-counters';
import { BenchContext, fresh, nextTrivial, rotate, Scenario, sleep } from './context';
import { peersReport } from './peers.report';

export type SideKey = 'template' | 'inline' | 'peer' | 'guarded' | 'guarded-inline';

/** The sides that are another side's apps again, running the inline twin of the trivial job. */
const twin = (key: SideKey) => key === 'inline' || key === 'guarded-inline';

interface Side {
  key: SideKey;
  label: string;
  /** The trivial job's type: `bench-sum`, or on an inline twin side (the same apps again) its inline twin. */
  trivial: string;
  /** API replicas; the first serves the one-replica legs, the others are parked (SIGSTOP) outside the legs that use them. */
  apis: AppProcess[];
  worker: AppProcess;
  /** Keep-alive clients by replica and socket count, opened once so every leg runs on warm connections. */
  clients: Map<string, HttpClient>;
  /** The finished job whose GET is the isolation leg's I/O endpoint. */
  jobId?: string;
}

interface Reply {
  id: string;
  status: string;
  error?: unknown;
}

// why: the template's name, which the peers' APIs export too (the same prom-client collector).
const LOOP_P99 = 'nest_offload_nodejs_eventloop_lag_p99_seconds';
/** Processes started at once (each Nest start-up takes a core for a while). */
const START_GROUP = 4;

/**
 * 8. The peers users would build instead, on the conventional NestJS + @nestjs/bullmq setup of the
 * boilerplates: an API that adds the job and waits for it over HTTP and a separate Nest worker
 * process running the same job `run` on its event loop (baselines/peer-*.ts). The bare peer has
 * nothing else; the equal-guarantee peer (PEER_API_KEY, baselines/guarded-*.ts) adds what the
 * template guarantees, each from its usual library: an API-key guard with a failed-key throttle
 * per address on Redis, a result cache looked up before the add, single flight by BullMQ's
 * deduplication, and its worker's loop kept free of the work: a type that is not `inline` runs on
 * a piscina pool, as on the template's pool threads (the `guarded-inline` side is the same apps
 * with the inline twin, run on the loop). Same HTTP client, same jobs, alternating rounds: trivial
 * jobs/s at 32 callers and one caller's p50/p99 (the template and the equal-guarantee peer at 1
 * and at N API replicas), CPU per job of each process and Redis commands per job, ~25 ms CPU
 * jobs/s, cache hits, and each API's isolation (GET of a finished job, CPU idle vs fed with CPU
 * jobs).
 */
export class PeersScenario implements Scenario<ScenarioReport> {
  readonly name = 'peers';
  private readonly rounds = new Rounds();
  private sides?: Side[];
  private extras: AppProcess[] = [];
  /** Extra replicas running now (resumed); the rest are parked. */
  private readonly live = new Set<AppProcess>();
  private iterations = 0;
  private redisPid?: number;

  constructor(private readonly ctx: BenchContext) {}

  private get replicaCounts(): number[] {
    return this.ctx.opts.peers.replicas;
  }

  async beginPass(): Promise<void> {
    const { opts, progress } = this.ctx;
    this.iterations = this.ctx.iterationsFor(opts.cpuJobMs);
    if (!this.sides) await this.start();
    progress.log(`${this.name}: warming up every side and replica`);
    const sides = this.sides!;
    const extra = new Set(this.extras);
    resume(this.extras);
    for (const side of sides) {
      if (!twin(side.key)) side.jobId ??= (await this.submit(side, 1, 'fibonacci', { n: 20 })).id;
      for (const [replica, api] of side.apis.entries()) {
        await closedLoop({ concurrency: 1, total: 20, task: () => this.submitTo(side, replica, 1, side.trivial, nextTrivial()) });
        if (extra.has(api)) continue;
        if (!twin(side.key)) await closedLoop({ concurrency: 2, total: 4, task: () => this.submit(side, 2, 'bench-pbkdf2', this.cpuInput()) });
      }
    }
    park(this.extras);
    this.live.clear();
  }

  /** The equal-guarantee peer's replicas and worker, and the template's extra API replicas (started in groups, parked); the bare peer is run.ts's. */
  private async start(): Promise<void> {
    const { opts, redis, prefix, progress, servers, templateEnv } = this.ctx;
    const max = Math.max(...this.replicaCounts);
    const peerEnv = { REDIS_URL: redis.url, NODE_ENV: 'production', CONCURRENCY: String(opts.threads) };
    const guardedEnv = { ...peerEnv, REDIS_PREFIX: `${prefix}-guarded`, PEER_API_KEY: BENCH_API_KEY };
    const script = (name: string) => join(__dirname, '..', 'baselines', name);
    const peer = (name: string, env: Record<string, string>, kind: 'api' | 'worker') => () =>
      startNode(script(name), env, { cwd: opts.root, kind, nodeArgs: opts.nodeArgs });
    const starts: Array<[string, () => Promise<AppProcess>]> = [
      ['guarded worker', peer('peer-worker.main.js', guardedEnv, 'worker')],
      ...Array.from({ length: max }, (): [string, () => Promise<AppProcess>] => ['guarded API', peer('peer-api.main.js', guardedEnv, 'api')]),
      ...Array.from({ length: max - 1 }, (): [string, () => Promise<AppProcess>] => [
        'template API',
        () => startTemplateApp(opts.dist, 'api', templateEnv, { cwd: opts.root, nodeArgs: opts.nodeArgs }),
      ]),
    ];
    const started: Array<[string, AppProcess]> = [];
    for (let i = 0; i < starts.length; i += START_GROUP) {
      const group = starts.slice(i, i + START_GROUP);
      const settled = await Promise.allSettled(group.map(([, start]) => start()));
      settled.forEach((s, j) => s.status === 'fulfilled' && started.push([group[j][0], s.value]));
      const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
      if (failed) {
        await Promise.all(started.map(([, p]) => p.stop()));
        throw failed.reason;
      }
    }
    const all = (name: string) => started.filter(([n]) => n === name).map(([, p]) => p);
    const bare = await this.ctx.sharedPeer();
    const guardedApis = all('guarded API');
    for (const api of guardedApis) sendKeyTo(api.url);
    const templateApis = [servers.api, ...all('template API')];
    this.extras = [...templateApis.slice(1), ...guardedApis.slice(1)];
    this.sides = [
      { key: 'template', label: 'template', trivial: 'bench-sum', apis: templateApis, worker: servers.worker, clients: new Map() },
      { key: 'inline', label: 'template, inline type', trivial: 'bench-sum-inline', apis: templateApis, worker: servers.worker, clients: new Map() },
      // The bare peer is run.ts's (shared with the files scenario).
      { key: 'peer', label: 'bare peer (@nestjs/bullmq API + worker)', trivial: 'bench-sum', apis: [bare.api], worker: bare.worker, clients: new Map() },
      { key: 'guarded', label: 'equal-guarantee peer', trivial: 'bench-sum', apis: guardedApis, worker: all('guarded worker')[0], clients: new Map() },
      { key: 'guarded-inline', label: 'equal-guarantee peer, inline type', trivial: 'bench-sum-inline', apis: guardedApis, worker: all('guarded worker')[0], clients: new Map() },
    ];
    this.redisPid = await redisServerPid(this.ctx.redis, this.ctx.redisClient);
    // why: with BENCH_NODE_ARGS=--cpu-prof, profiles are named by pid.
    for (const side of this.sides.filter((s) => !twin(s.key))) {
      progress.log(`${this.name}: ${side.label}: API pids ${side.apis.map((p) => p.pid).join(', ')} (the first serves alone); worker pid ${side.worker.pid}`);
    }
    if (this.redisPid) progress.log(`${this.name}: Redis pid ${this.redisPid}`);
  }

  async round(round: number, rounds: number): Promise<void> {
    const { opts, progress } = this.ctx;
    const o = opts.peers;
    const step = (text: string) => progress.step(this.name, round + 1, rounds, text);
    const all = this.sides!;
    const side = (key: SideKey) => all.find((s) => s.key === key)!;

    for (const n of this.replicaCounts) {
      await this.useReplicas(n);
      // The bare peer runs with one API only: it is the cost of the guarantees, not a fleet.
      const sides = rotate(all.filter((s) => n === 1 || s.key !== 'peer'), round);
      const at = `${n} API${n > 1 ? 's' : ''}`;
      for (const s of sides) {
        step(`${s.label}, ${at}: ${o.callers} callers, trivial ${s.trivial} jobs for ${o.durationS} s`);
        await this.trivial(s, n);
      }
      for (const s of sides) {
        step(`${s.label}, ${at}: ${o.sequential} trivial jobs, one caller`);
        const run = await closedLoop({ concurrency: 1, total: o.sequential, task: (i) => this.submitTo(s, i % n, 1, s.trivial, nextTrivial()) });
        // why tolerated up to 1%: see `trivial`.
        if (run.errors.length > 0) this.ctx.progress.log(`  ${s.label}, ${at}, one caller: ${run.errors.length} of ${o.sequential} jobs failed; first: ${run.errors[0]}`);
        if (run.errors.length > 0.01 * o.sequential) throw new Error(`${s.label}: ${run.errors[0]}`);
        const latency = summarize(run.latencies);
        this.rounds.add(`${s.key}.${n}.p50`, latency.p50);
        this.rounds.add(`${s.key}.${n}.p99`, latency.p99);
      }
    }
    await this.useReplicas(1);
    const threeSides = rotate(all.filter((s) => !twin(s.key)), round);
    for (const s of threeSides) {
      step(`${s.label}: ${o.cpuJobs} pbkdf2 jobs (${this.iterations} iterations), ${o.cpuCallers} callers`);
      const run = await closedLoop({ concurrency: o.cpuCallers, total: o.cpuJobs, task: () => this.submit(s, o.cpuCallers, 'bench-pbkdf2', this.cpuInput()) });
      if (run.errors.length > 0) throw new Error(`${s.label}: ${run.errors[0]}`);
      this.rounds.add(`${s.key}.cpuJobsPerS`, o.cpuJobs / (run.elapsedMs / 1000));
    }
    for (const s of rotate([side('template'), side('guarded')], round)) {
      step(`${s.label}: cache hits, ${o.hitCallers} callers for ${o.durationS} s`);
      await this.hits(s);
    }
    for (const s of rotate([side('template'), side('peer')], round)) await this.isolation(s, step);

    this.ratios();
    const last = (name: string) => this.rounds.get(name).values.at(-1)!;
    for (const n of this.replicaCounts) {
      for (const s of all.filter((x) => n === 1 || x.key !== 'peer')) {
        const k = `${s.key}.${n}`;
        progress.log(
          `  ${s.label}, ${n} API(s): ${num(last(`${k}.jobsPerS`))} trivial jobs/s, CPU ms/job APIs ${num(last(`${k}.cpu.apis`))} worker ${num(last(`${k}.cpu.worker`))} ` +
            `fleet ${num(last(`${k}.cpu.fleet`))}${this.redisPid ? `, Redis commands/job ${num(last(`${k}.commands`))}` : ''}; alone p50 ${ms(last(`${k}.p50`))}, p99 ${ms(last(`${k}.p99`))}`,
        );
      }
    }
    for (const s of threeSides) progress.log(`  ${s.label}: ${num(last(`${s.key}.cpuJobsPerS`))} CPU jobs/s`);
    for (const s of [side('template'), side('peer')]) {
      progress.log(
        `  ${s.label}: GET ${num(last(`${s.key}.idle.rps`))} → ${num(last(`${s.key}.busy.rps`))} req/s (isolation ${num(last(`${s.key}.isolation`))}), ` +
          `loop p99 ${ms(last(`${s.key}.idle.loopP99`))} → ${ms(last(`${s.key}.busy.loopP99`))}`,
      );
    }
  }

  /** The round's ratios: the template against the bare peer (one API) and against the equal-guarantee peer (each replica count). */
  private ratios(): void {
    const last = (name: string) => this.rounds.get(name).values.at(-1)!;
    const add = (name: string, value: number) => Number.isFinite(value) && this.rounds.add(name, value);
    add('throughputRatio', last('template.1.jobsPerS') / last('peer.1.jobsPerS'));
    add('p50Ratio', last('template.1.p50') / last('peer.1.p50'));
    add('p50Diff', last('template.1.p50') - last('peer.1.p50'));
    add('p99Ratio', last('template.1.p99') / last('peer.1.p99'));
    add('cpuRatio', last('template.cpuJobsPerS') / last('peer.cpuJobsPerS'));
    add('inline.throughputRatio', last('inline.1.jobsPerS') / last('peer.1.jobsPerS'));
    add('inline.p50Diff', last('inline.1.p50') - last('peer.1.p50'));
    add('inline.byThread', last('inline.1.jobsPerS') / last('template.1.jobsPerS'));
    add('guarded.cpuRatio', last('template.cpuJobsPerS') / last('guarded.cpuJobsPerS'));
    add('guarded.hitsRatio', last('template.hitsPerS') / last('guarded.hitsPerS'));
    for (const n of this.replicaCounts) {
      // Each type against the peer running it the same way: on a pool thread, or on the worker's event loop.
      for (const [k, peer] of [['template', 'guarded'], ['inline', 'guarded-inline']] as const) {
        const [t, g] = [`${k}.${n}`, `${peer}.${n}`];
        add(`vsGuarded.${t}.jobsPerS`, last(`${t}.jobsPerS`) / last(`${g}.jobsPerS`));
        add(`vsGuarded.${t}.p50Ratio`, last(`${t}.p50`) / last(`${g}.p50`));
        add(`vsGuarded.${t}.p50Diff`, last(`${t}.p50`) - last(`${g}.p50`));
        add(`vsGuarded.${t}.fleetCpu`, last(`${t}.cpu.fleet`) / last(`${g}.cpu.fleet`));
      }
      // The hop's price, the thread type against the peer running the same work on its event loop.
      add(`vsGuardedLoop.template.${n}.jobsPerS`, last(`template.${n}.jobsPerS`) / last(`guarded-inline.${n}.jobsPerS`));
      add(`vsGuardedLoop.template.${n}.p50Ratio`, last(`template.${n}.p50`) / last(`guarded-inline.${n}.p50`));
    }
  }

  /**
   * Runs the first `n` API replicas of the template and the equal-guarantee peer, parks the rest,
   * and waits until what was resumed is quiet (a peer replica's QueueEvents first reads every job
   * event it missed while parked).
   */
  private async useReplicas(n: number): Promise<void> {
    const wanted = this.sides!.flatMap((s) => (s.key === 'template' || s.key === 'guarded' ? s.apis.slice(1, n) : []));
    const toPark = [...this.live].filter((p) => !wanted.includes(p));
    const toResume = wanted.filter((p) => !this.live.has(p));
    park(toPark);
    toPark.forEach((p) => this.live.delete(p));
    resume(toResume);
    toResume.forEach((p) => this.live.add(p));
    if (toResume.length === 0) return;
    const pids = this.sides!.flatMap((s) => [...s.apis, s.worker]).filter((p) => !this.extras.includes(p) || this.live.has(p)).map((p) => p.pid);
    if (!(await untilQuiet(pids))) this.ctx.progress.log('  (the resumed replicas were still busy after 10 s of waiting; measuring anyway)');
  }

  /** CPU ms of the side's first `n` APIs, its worker and Redis (own server only), and Redis's command count (idem). */
  private async counters(side: Side, n: number): Promise<{ apis: number; worker: number; redis: number; commands: number }> {
    const cpu = (pid: number) => schedCounters(pid).cpuMs;
    return {
      apis: side.apis.slice(0, n).reduce((sum, p) => sum + cpu(p.pid), 0),
      worker: cpu(side.worker.pid),
      redis: this.redisPid ? cpu(this.redisPid) : NaN,
      commands: this.redisPid ? await redisCommandCount(this.ctx.redisClient) : NaN,
    };
  }

  /** Trivial jobs from `callers` callers spread over `n` replicas: jobs/s, CPU per job of each process, Redis commands per job. */
  private async trivial(side: Side, n: number): Promise<void> {
    const o = this.ctx.opts.peers;
    const before = await this.counters(side, n);
    const run = await closedLoop({ concurrency: o.callers, durationMs: o.durationS * 1000, task: (i) => this.submitTo(side, i % n, Math.ceil(o.callers / n), side.trivial, nextTrivial()) });
    const after = await this.counters(side, n);
    const k = `${side.key}.${n}`;
    // why tolerate a few: on a host loaded by other work an inline job's 100 ms (wall clock, on the
    // worker's loop) can run out; they are counted and shown, and more than 1% fails the run.
    this.rounds.add(`${k}.failed`, run.errors.length);
    if (run.errors.length > 0) this.ctx.progress.log(`  ${side.label}, ${n} API(s): ${run.errors.length} of ${run.errors.length + run.results.length} jobs failed; first: ${run.errors[0]}`);
    if (run.errors.length > 0.01 * (run.errors.length + run.results.length)) throw new Error(`${side.label}: ${run.errors[0]}`);
    const jobs = run.results.length;
    const per = (figure: 'apis' | 'worker' | 'redis' | 'commands') => (after[figure] - before[figure]) / jobs;
    this.rounds.add(`${k}.jobsPerS`, jobs / (run.elapsedMs / 1000));
    this.rounds.add(`${k}.cpu.apis`, per('apis'));
    this.rounds.add(`${k}.cpu.worker`, per('worker'));
    this.rounds.add(`${k}.cpu.fleet`, per('apis') + per('worker') + (this.redisPid ? per('redis') : 0));
    if (this.redisPid) {
      this.rounds.add(`${k}.cpu.redis`, per('redis'));
      // why minus 1: the INFO that read the count after the leg is one of the commands counted.
      this.rounds.add(`${k}.commands`, (after.commands - before.commands - 1) / jobs);
    }
  }

  /** Repeated submissions of one finished input from `hitCallers` callers (one API): hits/s, API CPU and Redis commands per hit. */
  private async hits(side: Side): Promise<void> {
    const o = this.ctx.opts.peers;
    const input = nextTrivial();
    for (let i = 0; i < 2; i++) await this.submit(side, 1, 'bench-sum', input);
    const before = await this.counters(side, 1);
    const run = await closedLoop({ concurrency: o.hitCallers, durationMs: o.durationS * 1000, task: () => this.submit(side, o.hitCallers, 'bench-sum', input) });
    const after = await this.counters(side, 1);
    if (run.errors.length > 0) throw new Error(`${side.label} cache hits: ${run.errors[0]}`);
    const hits = run.results.length;
    if (run.results.some((r) => r.id !== run.results[0].id)) throw new Error(`${side.label}: a repeated submission ran again instead of hitting the cache`);
    this.rounds.add(`${side.key}.hitsPerS`, hits / (run.elapsedMs / 1000));
    this.rounds.add(`${side.key}.hit.cpu.api`, (after.apis - before.apis) / hits);
    if (this.redisPid) this.rounds.add(`${side.key}.hit.commands`, (after.commands - before.commands - 1) / hits);
  }

  /** GET of a finished job at full load, CPU idle and then with `feeders` callers keeping CPU jobs in flight. */
  private async isolation(side: Side, step: (text: string) => void): Promise<void> {
    const o = this.ctx.opts.peers;
    const url = side.apis[0].url;
    const get = { url: `${url}/v1/jobs/${side.jobId}`, connections: o.connections };
    // why: reading resets prom-client's loop-delay histogram, so each read after a leg covers that leg only.
    const loopP99 = async () => (await readMetric(url, LOOP_P99)) * 1000;

    step(`${side.label}: GET, ${o.connections} connections, CPU idle`);
    await loopP99();
    let watch = this.watch(side);
    const idle = await blast({ ...get, durationS: o.idleS });
    this.watched(side, 'idle', watch, idle.ok);
    const idleLoop = await loopP99();

    step(`${side.label}: GET with ${o.feeders} callers feeding ~${this.ctx.opts.cpuJobMs} ms jobs`);
    const saturator = new Saturator(url, o.feeders, () => ({ type: 'bench-pbkdf2', input: this.cpuInput() }));
    // why: the same settling time on both sides, so the busy leg starts with the worker(s) running jobs.
    await sleep(500);
    await loopP99();
    const doneBefore = saturator.completed;
    watch = this.watch(side);
    const busy = await blast({ ...get, durationS: o.busyS });
    this.watched(side, 'busy', watch, busy.ok);
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

  /** What the host's CPU and the side's API do during a GET leg (see `watched`). */
  private watch(side: Side): { at: number; host: HostCpu; api: SchedCounters } {
    return { at: performance.now(), host: hostCpu(), api: schedCounters(side.apis[0].pid) };
  }

  /**
   * The GET leg's figures beside its req/s, to find what takes a round down: the API's CPU and
   * run-queue wait per GET (schedstat), and the cores each process used meanwhile, those of this run
   * by role and every other process on the host (other work on a shared machine) together.
   */
  private watched(side: Side, leg: 'idle' | 'busy', from: { at: number; host: HostCpu; api: SchedCounters }, gets: number): void {
    const api = schedCounters(side.apis[0].pid);
    const wallMs = performance.now() - from.at;
    const host = hostCpu();
    const named = [side.apis[0].pid, side.worker.pid, this.redisPid];
    const run = childrenOf(host, process.pid).filter((pid) => !named.includes(pid));
    const { byLabel, others, topOthers } = hostCpuShares(from.host, host, wallMs, {
      api: [side.apis[0].pid],
      worker: [side.worker.pid],
      redis: this.redisPid ? [this.redisPid] : [],
      bench: [process.pid],
      run,
    });
    const k = `${side.key}.${leg}`;
    this.rounds.add(`${k}.apiCpuPerGet`, ((api.cpuMs - from.api.cpuMs) / gets) * 1000);
    this.rounds.add(`${k}.apiWaitPerGet`, ((api.waitMs - from.api.waitMs) / gets) * 1000);
    this.rounds.add(`${k}.apiPreemptedPerK`, ((api.involuntary - from.api.involuntary) / gets) * 1000);
    for (const [label, cores] of Object.entries(byLabel)) this.rounds.add(`${k}.cores.${label}`, cores);
    this.rounds.add(`${k}.cores.others`, others);
    const c = (n: number) => n.toFixed(2);
    this.ctx.progress.log(
      `  ${side.label}, GET ${leg}: API ${num(((api.cpuMs - from.api.cpuMs) / gets) * 1000)} µs CPU and ${num(((api.waitMs - from.api.waitMs) / gets) * 1000)} µs run-queue wait per GET; ` +
        `cores used: API ${c(byLabel.api)}, worker ${c(byLabel.worker)}, Redis ${c(byLabel.redis)}, bench ${c(byLabel.bench)}, the run's other processes ${c(byLabel.run)}, ` +
        `other processes on the host ${c(others)} (${topOthers.join(', ') || 'none'})`,
    );
  }

  private cpuInput() {
    return { salt: fresh(), iterations: this.iterations };
  }

  /** Submits a job to the side's first API and waits for it (`Prefer: wait`). */
  private submit(side: Side, sockets: number, type: string, input: unknown): Promise<Reply> {
    return this.submitTo(side, 0, sockets, type, input);
  }

  /** Submits a job to the side's API `replica` and waits for it (`Prefer: wait`); resolves with the finished view. */
  private async submitTo(side: Side, replica: number, sockets: number, type: string, input: unknown): Promise<Reply> {
    const id = `${replica}:${sockets}`;
    let client = side.clients.get(id);
    if (!client) side.clients.set(id, (client = new HttpClient(side.apis[replica].url, sockets)));
    const reply = await client.json<Reply>('POST', `/v1/jobs/${type}`, { json: input, headers: { prefer: 'wait=60' } });
    if (reply.status !== 200 || reply.body?.status !== 'completed') {
      throw new Error(`${side.label} ${type} job: HTTP ${reply.status}, status ${reply.body?.status}${reply.body?.error ? `, error ${JSON.stringify(reply.body.error).slice(0, 300)}` : ''}`);
    }
    return reply.body;
  }

  result(): ScenarioReport {
    return peersReport({ opts: this.ctx.opts, rounds: this.rounds, iterations: this.iterations, replicaCounts: this.replicaCounts, redisCounted: this.redisPid !== undefined });
  }

  async close(): Promise<void> {
    for (const side of this.sides ?? []) for (const client of side.clients.values()) client.close();
    resume(this.extras);
    // The bare peer is run.ts's to stop.
    const mine = (this.sides ?? []).filter((s) => s.key === 'guarded').flatMap((s) => [...s.apis, s.worker]);
    const stop = async (p: AppProcess) => {
      const killer = setTimeout(() => p.signal('SIGKILL'), 15_000);
      await p.stop('SIGTERM');
      clearTimeout(killer);
    };
    await Promise.all([...mine, ...this.extras.filter((p) => !mine.includes(p))].map(stop));
  }
}
