import type { AppProcess } from '../../test/support/apps';
import { HttpClient } from '../load/http-client';
import { ms, num, perS, ratio, spreadOf } from '../report/format';
import type { ChartPanel, Row } from '../report/report.types';
import { park, resume, startTemplateApp } from '../support/stack';
import type { Rounds } from '../support/stats';
import { schedCounters, untilQuiet } from '../tuning/sched-counters';
import { BenchContext, rotate } from './context';

/** `after` is the build under test (BENCH_DIST or ./dist), `before` the previous one (BENCH_BEFORE_DIST). */
type Build = 'after' | 'before';

/** One build's fleet, on a prefix of its own: a worker and API replicas; replica 1 serves every request. */
interface Fleet {
  build: Build;
  worker?: AppProcess;
  apis: AppProcess[];
  client?: HttpClient;
}

/** Trivial bench-sum jobs with `Prefer: wait` through `client`, in a closed loop (the scenario's own). */
export type Drive = (client: HttpClient, size: { total?: number; durationS?: number; callers: number }) => Promise<{ done: number; elapsedMs: number }>;

/** Figures of each leg: jobs/s and CPU ms per job (idle ones from 2 APIs up; Redis only with the bench's own server). */
const FIGURES = ['jobsPerS', 'serving', 'idleMean', 'idleMax', 'worker', 'redis', 'fleet'] as const;
type Figure = (typeof FIGURES)[number];
/** Figures compared between the smallest and the largest fleet of one build. */
const GROWTH: Figure[] = ['jobsPerS', 'redis', 'fleet'];
const BUILD_LABEL: Record<Build, string> = { after: 'after (this build)', before: 'before (BENCH_BEFORE_DIST)' };
const SCENARIO = '10. Replicas';
/** Processes started at once; see ReplicasScenario.beginPass. */
const START_GROUP = 4;

/**
 * The fleet legs of `replicas`: 1, 2, 4 and 8 API replicas and one worker on one prefix, every job
 * submitted (and waited on) through replica 1 while the others idle; jobs/s and the CPU per job of
 * each process. With BENCH_BEFORE_DIST, the same legs for the previous build on a prefix of its own,
 * alternating with this one round by round, and the ratios after ÷ before.
 *
 * A fleet of k is the first k replicas of a build running and the rest stopped (SIGSTOP), as is the
 * other build's whole fleet. why not start and stop replicas between legs: seven Node start-ups per
 * round and build, each leaving a cold process whose warm-up would land in the next measurement.
 */
export class FleetLegs {
  private fleets: Fleet[] = [];

  constructor(
    private readonly ctx: BenchContext,
    private readonly rounds: Rounds,
    private readonly drive: Drive,
    private readonly redisPid: () => Promise<number | undefined>,
  ) {}

  private get sizes(): number[] {
    return this.ctx.opts.replicas.fleetSizes;
  }

  /** The builds measured (known from the options, so the report still has them once the fleets are stopped). */
  private get builds(): Build[] {
    return this.ctx.opts.beforeDist ? ['after', 'before'] : ['after'];
  }

  /** Starts each build's fleet, warms it up with every replica running, then stops (parks) it. */
  async start(): Promise<void> {
    const { opts, templateEnv, prefix, progress } = this.ctx;
    const max = Math.max(...this.sizes);
    for (const build of this.builds) {
      const dist = build === 'after' ? opts.dist : opts.beforeDist!;
      const fleet: Fleet = { build, apis: [] };
      this.fleets.push(fleet);
      const env = { ...templateEnv, REDIS_PREFIX: `${prefix}-fleet-${build}` };
      const app = (kind: 'api' | 'worker') => () =>
        startTemplateApp(dist, kind, env, { cwd: opts.root, nodeArgs: opts.nodeArgs });
      progress.log(`replicas: starting the ${build} fleet (${dist}): ${max} APIs + 1 worker × ${opts.threads} threads on ${env.REDIS_PREFIX}`);
      const starts = [app('worker'), ...Array.from({ length: max }, () => app('api'))];
      for (let i = 0; i < starts.length; i += START_GROUP) {
        const settled = await Promise.allSettled(starts.slice(i, i + START_GROUP).map((start) => start()));
        for (const s of settled) {
          if (s.status !== 'fulfilled') continue;
          if (s.value.kind === 'worker') fleet.worker = s.value;
          else fleet.apis.push(s.value);
        }
        const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
        if (failed) throw failed.reason;
      }
      fleet.client = new HttpClient(fleet.apis[0].url, 64);
      progress.log(`  ${build} fleet: API pids ${fleet.apis.map((p) => p.pid).join(', ')} (the first serves); worker pid ${fleet.worker!.pid}`);
      await this.drive(fleet.client, { total: opts.replicas.callers * 8, callers: opts.replicas.callers });
      park(processes(fleet));
    }
  }

  /** Resumes every process and stops it (a stopped process takes SIGTERM only once resumed). */
  async stop(): Promise<void> {
    for (const fleet of this.fleets) {
      resume(processes(fleet));
      fleet.client?.close();
      await Promise.all(processes(fleet).map((p) => p.stop()));
    }
    this.fleets = [];
  }

  /** Every fleet size, both builds in turn (which goes first alternates by round); then the round's ratios. */
  async round(round: number, step: (what: string) => void): Promise<void> {
    const o = this.ctx.opts.replicas;
    for (const size of this.sizes) {
      for (const fleet of rotate(this.fleets, round)) {
        step(`fleet, ${fleet.build}: ${size} API${size > 1 ? `s (1 serving, ${size - 1} idle)` : ''} + 1 worker, trivial bench-sum jobs through replica 1, ${o.callers} callers, ${o.fleetS} s`);
        await this.measure(fleet, size);
      }
    }
    const last = (name: string) => this.rounds.get(name).values.at(-1) ?? NaN;
    const add = (name: string, value: number) => {
      if (Number.isFinite(value)) this.rounds.add(name, value);
    };
    const [min, max] = [Math.min(...this.sizes), Math.max(...this.sizes)];
    for (const fleet of this.fleets) {
      for (const figure of GROWTH) add(`fleet.${fleet.build}.growth.${figure}`, last(key(fleet.build, max, figure)) / last(key(fleet.build, min, figure)));
    }
    if (!this.ctx.opts.beforeDist) return;
    for (const size of this.sizes) {
      for (const figure of FIGURES) add(`fleet.ratio.${size}.${figure}`, last(key('after', size, figure)) / last(key('before', size, figure)));
    }
  }

  /** Runs the first `size` replicas of `fleet` and its worker, measures, and parks them again. */
  private async measure(fleet: Fleet, size: number): Promise<void> {
    const o = this.ctx.opts.replicas;
    const [serving, ...idle] = fleet.apis.slice(0, size);
    const running = [serving, ...idle, fleet.worker!];
    resume(running);
    try {
      await this.settle(running);
      // why a third of a leg of load first: after a pause the first jobs run colder (connection
      // pools, caches, code V8 flushed meanwhile); measured, that made the first leg of a round slowest.
      await this.drive(fleet.client!, { durationS: o.fleetS / 3, callers: o.callers });
      const redisPid = await this.redisPid();
      const pids = [...running.map((p) => p.pid), ...(redisPid ? [redisPid] : [])];
      // why schedstat (ns), not /proc/<pid>/stat (10 ms ticks): an idle replica's target is 0.02 ms
      // per job, a tick's worth over a few seconds of jobs.
      const cpu = () => pids.map((pid) => schedCounters(pid).cpuMs);
      const before = cpu();
      const run = await this.drive(fleet.client!, { durationS: o.fleetS, callers: o.callers });
      const perJob = cpu().map((after, i) => (after - before[i]) / run.done);
      const idlePerJob = perJob.slice(1, size);
      const figures: Partial<Record<Figure, number>> = {
        jobsPerS: run.done / (run.elapsedMs / 1000),
        serving: perJob[0],
        worker: perJob[size],
        fleet: perJob.reduce((a, b) => a + b, 0),
        ...(redisPid ? { redis: perJob[size + 1] } : {}),
        ...(idlePerJob.length > 0 ? { idleMean: idlePerJob.reduce((a, b) => a + b, 0) / idlePerJob.length, idleMax: Math.max(...idlePerJob) } : {}),
      };
      for (const [figure, value] of Object.entries(figures)) this.rounds.add(key(fleet.build, size, figure as Figure), value);
      idlePerJob.forEach((v, i) => this.rounds.add(key(fleet.build, size, `idle${i + 2}`), v));
      const f = (n?: number) => (n === undefined ? 'n/a' : n.toFixed(3));
      this.ctx.progress.log(
        `  ${fleet.build}, ${size} API(s): ${figures.jobsPerS!.toFixed(1)} jobs/s; CPU ms per job: serving API ${f(figures.serving)}` +
          (idlePerJob.length > 0 ? `, idle APIs ${idlePerJob.map((v) => f(v)).join(' ')}` : '') +
          `, worker ${f(figures.worker)}, Redis ${f(figures.redis)}, fleet ${f(figures.fleet)}`,
      );
    } finally {
      park(running);
    }
  }

  /**
   * Waits until the processes just resumed are quiet (under 10 ms of CPU in 200 ms), at most 10 s:
   * a replica of the before build first reads every job event it missed while parked.
   */
  private async settle(running: AppProcess[]): Promise<void> {
    if (!(await untilQuiet(running.map((p) => p.pid)))) this.ctx.progress.log('  (the fleet was still busy after 10 s of waiting; measuring anyway)');
  }

  /** The fleet's rows of the results table. */
  rows(): Row[] {
    const r = (name: string) => this.rounds.get(name);
    // why: a ratio is added only when both legs gave a finite figure; a row whose every round lacked
    // one reports its figures without a ratio rather than a NaN.
    const ratioOf = (name: string) => (r(name).values.length > 0 ? r(name) : undefined);
    const [min, max] = [Math.min(...this.sizes), Math.max(...this.sizes)];
    const hasBefore = this.ctx.opts.beforeDist !== undefined;
    const ownRedis = this.ctx.redis.own;
    const fleet = `${max} APIs + 1 worker, every job through replica 1`;
    const rows: Row[] = [
      {
        scenario: SCENARIO,
        measure: `CPU per trivial job of the busiest idle API replica (${fleet}, ${max - 1} idle)${hasBefore ? ', after ÷ before' : ''}`,
        template: spreadOf(r(key('after', max, 'idleMax')), ms),
        baseline: hasBefore ? spreadOf(r(key('before', max, 'idleMax')), ms) : '',
        ratio: hasBefore ? ratioOf(`fleet.ratio.${max}.idleMax`) : undefined,
        target: '≤ 0.02 ms',
        met: r(key('after', max, 'idleMax')).median <= 0.02,
      },
    ];
    for (const build of this.builds) {
      const context = build === 'before' ? ' (before, for context)' : '';
      if (ownRedis) {
        rows.push({
          scenario: SCENARIO,
          measure: `Redis CPU per trivial job, ${max} APIs ÷ ${min} (1 serving, the rest idle)${context}`,
          template: spreadOf(r(key(build, max, 'redis')), ms),
          baseline: spreadOf(r(key(build, min, 'redis')), ms),
          ratio: ratioOf(`fleet.${build}.growth.redis`),
          ...(build === 'after' ? { target: 'within ±10%', met: Math.abs(r(`fleet.${build}.growth.redis`).median - 1) <= 0.1 } : {}),
        });
      }
      rows.push({
        scenario: SCENARIO,
        measure: `fleet CPU per trivial job (APIs + worker${ownRedis ? ' + Redis' : ''}), ${max} APIs ÷ ${min}${context}`,
        template: spreadOf(r(key(build, max, 'fleet')), ms),
        baseline: spreadOf(r(key(build, min, 'fleet')), ms),
        ratio: ratioOf(`fleet.${build}.growth.fleet`),
      });
    }
    if (hasBefore) {
      rows.push(
        {
          scenario: SCENARIO,
          measure: `fleet CPU per trivial job (APIs + worker${ownRedis ? ' + Redis' : ''}), ${fleet}: after ÷ before`,
          template: spreadOf(r(key('after', max, 'fleet')), ms),
          baseline: spreadOf(r(key('before', max, 'fleet')), ms),
          ratio: ratioOf(`fleet.ratio.${max}.fleet`),
        },
        {
          scenario: SCENARIO,
          measure: `trivial bench-sum jobs/s, ${fleet} (${this.ctx.opts.replicas.callers} callers): after ÷ before`,
          template: spreadOf(r(key('after', max, 'jobsPerS')), (v) => perS(v, 'jobs/s')),
          baseline: spreadOf(r(key('before', max, 'jobsPerS')), (v) => perS(v, 'jobs/s')),
          ratio: ratioOf(`fleet.ratio.${max}.jobsPerS`),
        },
      );
    }
    return rows;
  }

  /** The per-size tables: every figure of every build, then after ÷ before. */
  section(): string {
    const { opts } = this.ctx;
    const r = (name: string) => this.rounds.get(name);
    const cell = (name: string) => (r(name).values.length > 0 ? spreadOf(r(name), num) : '–');
    const lines = [
      `Fleet: ${this.sizes.join(', ')} API replicas and one worker (WORKER_THREADS=${opts.threads}) on one prefix per build; trivial bench-sum jobs with \`Prefer: wait\`, ` +
        `${opts.replicas.callers} callers, ${opts.replicas.fleetS} s per leg, all through replica 1; the other replicas idle (they neither submit nor wait). ` +
        "Replicas beyond the leg's count, and the other build's fleet, are stopped (SIGSTOP) meanwhile. " +
        (opts.beforeDist ? `Before: \`${opts.beforeDist}\`, after: \`${opts.dist}\`, alternating first each round. ` : '') +
        `CPU ms per job from /proc schedstat; fleet = every API + worker${this.ctx.redis.own ? ' + Redis' : ' (Redis not counted: a shared server)'}:`,
      '',
      '| Build | APIs | jobs/s | serving API | idle API, mean | idle API, max | each idle API (medians) | worker | Redis | fleet |',
      '|---|---|---|---|---|---|---|---|---|---|',
    ];
    for (const build of this.builds) {
      for (const size of this.sizes) {
        const at = (figure: string) => cell(key(build, size, figure));
        const each = Array.from({ length: size - 1 }, (_, i) => num(r(key(build, size, `idle${i + 2}`)).median)).join(', ') || '–';
        lines.push(`| ${BUILD_LABEL[build]} | ${size} | ${[at('jobsPerS'), at('serving'), at('idleMean'), at('idleMax'), each, at('worker'), at('redis'), at('fleet')].join(' | ')} |`);
      }
    }
    if (opts.beforeDist) {
      const ratioCell = (name: string) => (r(name).values.length > 0 ? ratio(r(name)) : '–');
      const figures: Figure[] = ['idleMean', 'serving', 'worker', 'redis', 'fleet', 'jobsPerS'];
      lines.push(
        '',
        'After ÷ before, per fleet size (median of the per-round ratios, min–max):',
        '',
        '| APIs | idle API CPU/job, mean | serving API CPU/job | worker CPU/job | Redis CPU/job | fleet CPU/job | jobs/s |',
        '|---|---|---|---|---|---|---|',
        ...this.sizes.map((size) => `| ${size} | ${figures.map((f) => ratioCell(`fleet.ratio.${size}.${f}`)).join(' | ')} |`),
      );
    }
    return lines.join('\n');
  }

  /** Jobs/s of the largest fleet, per build, for the chart. */
  bars(): ChartPanel['bars'] {
    const max = Math.max(...this.sizes);
    return this.builds.map((build) => ({ label: `trivial ${max} APIs ${build}`, value: this.rounds.get(key(build, max, 'jobsPerS')).median, template: build === 'after' }));
  }
}

function key(build: Build, size: number, figure: string): string {
  return `fleet.${build}.${size}.${figure}`;
}

function processes(fleet: Fleet): AppProcess[] {
  return [...fleet.apis, ...(fleet.worker ? [fleet.worker] : [])];
}
