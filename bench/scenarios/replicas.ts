import { request } from 'node:http';
import type { AppProcess } from '../../test/support/apps';
import { keyHeader } from '../load/api-key';
import { closedLoop, HttpClient } from '../load/http-client';
import { ms, num, perS, spreadOf } from '../report/format';
import type { ScenarioReport } from '../report/report.types';
import { cpuMs, preemptions, redisServerPid, startTemplate, startTemplateApp } from '../support/stack';
import { Rounds } from '../support/stats';
import { BenchContext, fresh, nextTrivial, rotate, Scenario, sleep } from './context';
import { FleetLegs } from './replicas.fleet';

interface View {
  id: string;
  status: string;
  result?: unknown;
}

/** Some API replicas and some workers on one key prefix: one deployment, sharing its queues. */
interface Stack {
  apis: AppProcess[];
  workers: AppProcess[];
  /** One keep-alive client per API, kept warm across rounds. */
  clients: HttpClient[];
}

type Load = 'cpu' | 'trivial' | 'hit';

/** A measured leg: a load driven through some of a stack's APIs. */
interface Leg {
  key: string;
  label: string;
  stack: Stack;
  apis: number;
}

const RUNS = 'nest_offload_job_run_seconds_count';
const CACHED_INPUT = { n: 26 };
/**
 * bench-sum over this many terms runs for about a second or more (1.3 s on an idle core here),
 * reporting progress every 100 ms: long enough for a stream opened after the submission to see it
 * run. why not fewer: 200 million terms took 0.26 s, and a CI run's stream saw only `completed`.
 */
const SSE_TERMS = 1_000_000_000;
/** Long enough to cancel while it runs. */
const CANCEL_TERMS = 20_000_000_000;

/**
 * Replicas cost nothing: two single-thread workers against one worker with two threads, two API
 * replicas against one behind the same load; single flight, cancel and SSE stay correct when a
 * job's submission, its cancel or its event stream land on different replicas, under load; and an
 * idle replica costs nothing per job (the fleet legs, replicas.fleet.ts, with the previous build
 * beside this one when BENCH_BEFORE_DIST names it).
 *
 * Three stacks of its own, each on its own key prefix so none (nor the run's default stack)
 * consumes another's jobs, and no leg runs beside an idle replica of its own prefix:
 * `oneWorker` = 1 API + 1 worker with WORKER_THREADS=2; `twoWorkers` = 1 API + 2 workers
 * with WORKER_THREADS=1; `twoApis` = 2 APIs + 2 workers with WORKER_THREADS=1. Same build, same env otherwise.
 */
export class ReplicasScenario implements Scenario<ScenarioReport> {
  readonly name = 'replicas';
  private readonly rounds = new Rounds();
  private stacks?: { oneWorker: Stack; twoWorkers: Stack; twoApis: Stack };
  private readonly fleet: FleetLegs;
  private iterations = 0;

  constructor(private readonly ctx: BenchContext) {
    this.fleet = new FleetLegs(ctx, this.rounds, (client, size) => this.drive([client], 'trivial', size), () => this.redisPid());
  }

  async beginPass(): Promise<void> {
    const { opts, progress, templateEnv, prefix } = this.ctx;
    this.iterations = this.ctx.iterationsFor(opts.cpuJobMs);
    progress.log(`${this.name}: starting 1 API + 1 worker × 2 threads; 1 API + 2 workers × 1 thread; 2 APIs + 2 workers × 1 thread; each on its own prefix`);
    const start = (suffix: string, threads: number) =>
      startTemplate(opts.root, { ...templateEnv, REDIS_PREFIX: `${prefix}-${suffix}`, WORKER_THREADS: String(threads) }, { dist: opts.dist, nodeArgs: opts.nodeArgs });
    const worker = () =>
      startTemplateApp(opts.dist, 'worker', { ...templateEnv, REDIS_PREFIX: `${prefix}-two-workers`, WORKER_THREADS: '1' }, { cwd: opts.root, nodeArgs: opts.nodeArgs });
    // why in two steps: eight Node processes starting at once on 2 cores can outlast the readiness timeout.
    const [a, b, bWorker] = await Promise.all([start('one-worker', 2), start('two-workers', 1), worker()]);
    const [c1, c2] = await Promise.all([start('two-apis', 1), start('two-apis', 1)]);
    this.stacks = {
      oneWorker: stack([a.api], [a.worker]),
      twoWorkers: stack([b.api], [b.worker, bWorker]),
      twoApis: stack([c1.api, c2.api], [c1.worker, c2.worker]),
    };
    // why: with BENCH_NODE_ARGS=--cpu-prof, profiles are named by pid.
    for (const [name, st] of Object.entries(this.stacks)) progress.log(`  ${name}: API pids ${st.apis.map((p) => p.pid).join(', ')}; worker pids ${st.workers.map((p) => p.pid).join(', ')}`);
    progress.log(`${this.name}: warming up (and priming the cached input on every prefix)`);
    for (const s of Object.values(this.stacks)) {
      for (const client of s.clients) {
        const first = await client.json<View>('POST', '/v1/jobs/fibonacci', { json: CACHED_INPUT, headers: { prefer: 'wait=30' } });
        if (first.body?.status !== 'completed') throw new Error(`replicas: priming job did not complete (HTTP ${first.status})`);
      }
      await this.drive(s.clients, 'cpu', { total: 4 });
      await this.drive(s.clients, 'trivial', { total: 64 });
    }
    await this.fleet.start();
  }

  async endPass(): Promise<void> {
    for (const s of Object.values(this.stacks ?? {})) {
      s.clients.forEach((c) => c.close());
      await Promise.all([...s.apis, ...s.workers].map((p) => p.stop()));
    }
    this.stacks = undefined;
    await this.fleet.stop();
  }

  async round(round: number, rounds: number): Promise<void> {
    const { opts, progress } = this.ctx;
    const o = opts.replicas;
    const { oneWorker, twoWorkers, twoApis } = this.stacks!;
    const step = (what: string) => progress.step(this.name, round + 1, rounds, what);

    // Workers: the same load on one API, in front of one 2-thread worker or two 1-thread workers.
    const workerLegs: Leg[] = [
      { key: 'w1x2', label: '1 worker × 2 threads', stack: oneWorker, apis: 1 },
      { key: 'w2x1', label: '2 workers × 1 thread', stack: twoWorkers, apis: 1 },
    ];
    for (const [load, what, size] of [
      ['cpu', `${o.cpuJobs} bench-pbkdf2 jobs (~${opts.cpuJobMs} ms), ${o.cpuCallers} callers`, { total: o.cpuJobs, callers: o.cpuCallers }],
      ['trivial', `trivial bench-sum jobs, ${o.callers} callers, ${o.durationS} s`, { durationS: o.durationS, callers: o.callers }],
    ] as const) {
      for (const leg of rotate(workerLegs, round)) {
        step(`${leg.label}: ${what}`);
        await this.measure(leg, load, size);
      }
      this.rounds.add(`workers.${load}.ratio`, this.last(`w2x1.${load}.jobsPerS`) / this.last(`w1x2.${load}.jobsPerS`));
    }

    // APIs: two 1-thread workers behind one API or two, the callers spread round-robin over them.
    const apiLegs: Leg[] = [
      { key: 'api1', label: '1 API', stack: twoWorkers, apis: 1 },
      { key: 'api2', label: '2 APIs, round-robin', stack: twoApis, apis: 2 },
    ];
    for (const [load, what] of [
      ['trivial', `trivial bench-sum jobs, ${o.callers} callers, ${o.durationS} s`],
      ['hit', `cache hits (POST /v1/jobs/fibonacci, same input), ${o.callers} callers, ${o.durationS} s`],
    ] as const) {
      for (const leg of rotate(apiLegs, round)) {
        step(`${leg.label}: ${what}`);
        await this.measure(leg, load, { durationS: o.durationS, callers: o.callers });
      }
      this.rounds.add(`apis.${load}.ratio`, this.last(`api2.${load}.jobsPerS`) / this.last(`api1.${load}.jobsPerS`));
    }
    // why: each of 2 APIs sees half the callers; CPU per request at that load on one API tells the
    // cost of less batching per event-loop turn apart from the cost of a second replica.
    step(`1 API, ${o.callers / 2} callers (each replica's share): cache hits, for CPU per hit`);
    await this.measure({ key: 'api1half', label: `1 API, ${o.callers / 2} callers`, stack: twoWorkers, apis: 1 }, 'hit', { durationS: o.durationS, callers: o.callers / 2 });

    await this.fleet.round(round, step);

    step(`correctness across replicas, under ${o.callers} callers of trivial jobs on both APIs`);
    await this.correctness(twoApis);
  }

  /** Drives `load` through the leg's APIs and records jobs/s and CPU ms per job of each kind of process. */
  private async measure(leg: Leg, load: Load, size: { total?: number; durationS?: number; callers: number }): Promise<void> {
    const processes: Array<[string, number[]]> = [
      ['API', leg.stack.apis.map((p) => p.pid)],
      ['workers', leg.stack.workers.map((p) => p.pid)],
      ['bench', [process.pid]],
    ];
    const redisPid = await this.redisPid();
    if (redisPid) processes.push(['Redis', [redisPid]]);
    const cpu = () => processes.map(([, pids]) => pids.reduce((sum, pid) => sum + cpuMs(pid), 0));
    // why: on 2 shared cores a second replica adds processes, not cores; preemptions show the contention.
    const apiPreemptions = () => leg.stack.apis.reduce((sum, p) => sum + preemptions(p.pid), 0);
    const preempted = apiPreemptions();
    const before = cpu();
    const run = await this.drive(leg.stack.clients.slice(0, leg.apis), load, size);
    const after = cpu();
    const apiPreemptedPerK = ((apiPreemptions() - preempted) / run.done) * 1000;
    this.rounds.add(`${leg.key}.${load}.apiPreemptionsPer1000`, apiPreemptedPerK);
    const jobsPerS = run.done / (run.elapsedMs / 1000);
    this.rounds.add(`${leg.key}.${load}.jobsPerS`, jobsPerS);
    processes.forEach(([name], i) => this.rounds.add(`${leg.key}.${load}.cpuPerJob.${name}`, (after[i] - before[i]) / run.done));
    this.ctx.progress.log(
      `  ${leg.label}: ${jobsPerS.toFixed(1)} ${load === 'hit' ? 'hits' : 'jobs'}/s; CPU ms per job: ` +
        processes.map(([name], i) => `${name} ${((after[i] - before[i]) / run.done).toFixed(2)}`).join(', ') +
        `; API preemptions per 1000: ${apiPreemptedPerK.toFixed(0)}`,
    );
  }

  private redisPid(): Promise<number | undefined> {
    return redisServerPid(this.ctx.redis, this.ctx.redisClient);
  }

  /** A closed loop of `load` over `clients`, request i going to client i mod their number. */
  private async drive(clients: HttpClient[], load: Load, size: { total?: number; durationS?: number; callers?: number }) {
    const run = await closedLoop({
      concurrency: size.callers ?? 8,
      total: size.total,
      durationMs: size.durationS === undefined ? undefined : size.durationS * 1000,
      task: (i) => this.submit(clients[i % clients.length], load),
    });
    if (run.errors.length > 0) throw new Error(`replicas (${load}): ${run.errors[0]}`);
    return { done: run.results.length, elapsedMs: run.elapsedMs };
  }

  private async submit(client: HttpClient, load: Load): Promise<View> {
    const [type, json] =
      load === 'cpu'
        ? ['bench-pbkdf2', { salt: fresh(), iterations: this.iterations }]
        : load === 'trivial'
          ? ['bench-sum', nextTrivial()]
          : ['fibonacci', CACHED_INPUT];
    const reply = await client.json<View & { cached?: boolean }>('POST', `/v1/jobs/${type}`, { json, headers: { prefer: 'wait=60' } });
    if (reply.body?.status !== 'completed') throw new Error(`${type}: HTTP ${reply.status}, status ${reply.body?.status}`);
    if (load === 'hit' && reply.body.cached !== true) throw new Error('a repeated submission was not served from the cache');
    return reply.body;
  }

  /**
   * Under load on both APIs: identical submissions spread over both run once; a job submitted on
   * API A and cancelled on API B ends cancelled; an event stream opened on B for a job submitted on
   * A sees its progress and completion. Any violation fails the run.
   */
  private async correctness(s: Stack): Promise<void> {
    const { progress, opts } = this.ctx;
    const [a, b] = s.clients;
    const background = backgroundLoad(opts.replicas.callers, (i) => this.submit(s.clients[i % 2], 'trivial'));
    try {
      await sleep(200);
      // Single flight: N identical fresh bench-pbkdf2 submissions, alternating between the two APIs.
      const callers = opts.replicas.flightCallers;
      const input = { salt: fresh(), iterations: this.ctx.iterationsFor(100) };
      const runs = () => Promise.all(s.workers.map((w) => w.metric(RUNS, { type: 'bench-pbkdf2' }))).then((v) => v.reduce((x, y) => x + y, 0));
      const before = await runs();
      const replies = await Promise.all(
        Array.from({ length: callers }, (_, i) => s.clients[i % 2].json<{ status: string; result?: { hash: string } }>('POST', '/v1/jobs/bench-pbkdf2', { json: input, headers: { prefer: 'wait=60' } })),
      );
      await sleep(200);
      const executions = (await runs()) - before;
      const hashes = new Set(replies.map((r) => (r.body?.status === 'completed' ? r.body.result?.hash : `status ${r.body?.status}`)));
      this.rounds.add('flight.executions', executions);
      if (executions !== 1 || hashes.size !== 1) {
        throw new Error(`replicas: ${callers} identical submissions over 2 APIs ran ${executions} times, ${hashes.size} distinct answers (${[...hashes].join(', ')})`);
      }

      // Cancel: submitted on A, running, cancelled on B, seen cancelled on A.
      const long = nextTrivial();
      const job = await a.json<View>('POST', '/v1/jobs/bench-sum', { json: { from: long.from, to: long.from + CANCEL_TERMS } });
      if (job.status !== 202) throw new Error(`replicas: cancel target answered HTTP ${job.status}`);
      const id = job.body.id;
      await until(async () => (await a.json<View>('GET', `/v1/jobs/${id}`)).body.status === 'active', 15_000, `job ${id} to start`);
      const t0 = performance.now();
      const cancel = await b.json<View>('DELETE', `/v1/jobs/${id}`);
      if (cancel.status !== 200 && cancel.status !== 202) throw new Error(`replicas: DELETE on API B answered HTTP ${cancel.status}`);
      let final = cancel.body;
      await until(async () => ['completed', 'failed', 'cancelled'].includes((final = (await a.json<View>('GET', `/v1/jobs/${id}`)).body).status), 15_000, `job ${id} to finish`);
      const cancelMs = performance.now() - t0;
      this.rounds.add('cancel.ok', final.status === 'cancelled' ? 1 : 0);
      this.rounds.add('cancel.ms', cancelMs);
      if (final.status !== 'cancelled') throw new Error(`replicas: a running job cancelled on API B ended ${final.status} on API A`);

      // SSE: submitted on A, streamed from B.
      const { from } = nextTrivial();
      const to = from + SSE_TERMS - 1;
      const sseJob = await a.json<View>('POST', '/v1/jobs/bench-sum', { json: { from, to } });
      const events = await readEvents(`${s.apis[1].url}/v1/jobs/${sseJob.body.id}/events`, 60_000);
      const progressEvents = events.filter((e) => e.event === 'progress').length;
      const last = events.at(-1);
      const expected = (((BigInt(from) + BigInt(to)) * BigInt(SSE_TERMS)) / 2n).toString();
      const completed = last?.event === 'completed' && (JSON.parse(last.data) as View).result === expected;
      this.rounds.add('sse.progress', progressEvents);
      this.rounds.add('sse.ok', completed && progressEvents > 0 ? 1 : 0);
      if (!completed || progressEvents === 0) {
        throw new Error(`replicas: the stream on API B for a job submitted on A saw ${progressEvents} progress events, last event ${last?.event ?? 'none'}`);
      }
      progress.log(`  single flight: ${executions} execution for ${callers} submissions; cancel via B: ${final.status} in ${cancelMs.toFixed(0)} ms; SSE via B: ${progressEvents} progress + completed`);
    } finally {
      const load = await background.stop();
      if (load.errors.length > 0) throw new Error(`replicas: background load failed: ${load.errors[0]}`);
      this.rounds.add('correctness.backgroundJobs', load.done);
    }
  }

  private last(name: string): number {
    return this.rounds.get(name).values.at(-1)!;
  }

  result(): ScenarioReport {
    const r = (name: string) => this.rounds.get(name);
    const o = this.ctx.opts.replicas;
    const jobs = (v: number) => perS(v, 'jobs/s');
    const all = (name: string, ok: (v: number) => boolean) => r(name).values.length > 0 && r(name).values.every(ok);
    const rows: ScenarioReport['rows'] = [
      {
        scenario: '10. Replicas',
        measure: `~${this.ctx.opts.cpuJobMs} ms pbkdf2 jobs/s, 2 workers × 1 thread ÷ 1 worker × 2 threads (one API, ${o.cpuCallers} callers)`,
        template: spreadOf(r('w2x1.cpu.jobsPerS'), jobs),
        baseline: spreadOf(r('w1x2.cpu.jobsPerS'), jobs),
        ratio: r('workers.cpu.ratio'),
        target: '≥ 0.95',
        met: r('workers.cpu.ratio').median >= 0.95,
      },
      {
        scenario: '10. Replicas',
        measure: `… trivial bench-sum jobs/s, same comparison (${o.callers} callers)`,
        template: spreadOf(r('w2x1.trivial.jobsPerS'), jobs),
        baseline: spreadOf(r('w1x2.trivial.jobsPerS'), jobs),
        ratio: r('workers.trivial.ratio'),
      },
      {
        scenario: '10. Replicas',
        measure: `trivial bench-sum jobs/s, 2 API replicas ÷ 1 API (${o.callers} callers round-robin; 2 workers × 1 thread behind)`,
        template: spreadOf(r('api2.trivial.jobsPerS'), jobs),
        baseline: spreadOf(r('api1.trivial.jobsPerS'), jobs),
        ratio: r('apis.trivial.ratio'),
        target: '≥ 0.95',
        met: r('apis.trivial.ratio').median >= 0.95,
      },
      {
        scenario: '10. Replicas',
        measure: `cache-hit POSTs/s, 2 API replicas ÷ 1 API (${o.callers} callers round-robin)`,
        template: spreadOf(r('api2.hit.jobsPerS'), perS),
        baseline: spreadOf(r('api1.hit.jobsPerS'), perS),
        ratio: r('apis.hit.ratio'),
        target: '≥ 0.95',
        met: r('apis.hit.ratio').median >= 0.95,
      },
      {
        scenario: '10. Replicas',
        measure: `executions for ${o.flightCallers} identical submissions alternating over 2 APIs, under load (every round)`,
        template: r('flight.executions').values.join(', '),
        baseline: '',
        target: 'exactly 1',
        met: all('flight.executions', (v) => v === 1),
      },
      {
        scenario: '10. Replicas',
        measure: 'a running job submitted on API A, DELETE on API B: ends cancelled (every round; DELETE → cancelled seen on A)',
        template: `${r('cancel.ok').values.filter((v) => v === 1).length}/${r('cancel.ok').values.length} cancelled, ${spreadOf(r('cancel.ms'), ms)}`,
        baseline: '',
        target: 'every round',
        met: all('cancel.ok', (v) => v === 1),
      },
      {
        scenario: '10. Replicas',
        measure: 'SSE on API B for a job submitted on A: progress events, then completed with the right result (every round)',
        template: `${r('sse.ok').values.filter((v) => v === 1).length}/${r('sse.ok').values.length} complete; progress events ${r('sse.progress').values.join(', ')}`,
        baseline: '',
        target: 'every round',
        met: all('sse.ok', (v) => v === 1),
      },
      ...this.fleet.rows(),
    ];
    const cell = (name: string) => (r(name).values.length ? spreadOf(r(name), num) : '–');
    const cpuRow = (leg: string, load: Load) =>
      [...['API', 'workers', 'bench', 'Redis'].map((p) => cell(`${leg}.${load}.cpuPerJob.${p}`)), cell(`${leg}.${load}.apiPreemptionsPer1000`)].join(' | ');
    return {
      key: 'replicas',
      title: 'Replicas',
      rows,
      chart: {
        throughput: {
          title: 'Replicas: jobs/s, one process vs two',
          unit: 'jobs/s',
          bars: [
            { label: 'pbkdf2 2 workers×1t', value: r('w2x1.cpu.jobsPerS').median, template: true },
            { label: 'pbkdf2 1 worker×2t', value: r('w1x2.cpu.jobsPerS').median, template: false },
            { label: 'trivial 2 APIs', value: r('api2.trivial.jobsPerS').median, template: true },
            { label: 'trivial 1 API', value: r('api1.trivial.jobsPerS').median, template: false },
            ...this.fleet.bars(),
          ],
        },
      },
      sections: [
        [
          `Replicas: three stacks of the template on their own prefixes (1 API + 1 worker with WORKER_THREADS=2; 1 API + 2 workers with WORKER_THREADS=1; ` +
            `2 APIs + 2 workers with WORKER_THREADS=1), legs alternating first each round; the correctness checks run on the last. pbkdf2: ${this.iterations} iterations, fresh salts. The correctness checks run while ${o.callers} callers ` +
            `submit trivial jobs over both APIs (${spreadOf(r('correctness.backgroundJobs'), num)} jobs per round went through meanwhile).`,
          '',
          "CPU ms per job (or per hit) of each kind of process, summed over the leg's stack (10 ms ticks):",
          '',
          '| Leg | API(s) | worker(s) | bench client | Redis | API preemptions per 1000 |',
          '|---|---|---|---|---|---|',
          `| pbkdf2, 1 worker × 2 threads | ${cpuRow('w1x2', 'cpu')} |`,
          `| pbkdf2, 2 workers × 1 thread | ${cpuRow('w2x1', 'cpu')} |`,
          `| trivial, 1 worker × 2 threads | ${cpuRow('w1x2', 'trivial')} |`,
          `| trivial, 2 workers × 1 thread | ${cpuRow('w2x1', 'trivial')} |`,
          `| trivial, 1 API | ${cpuRow('api1', 'trivial')} |`,
          `| trivial, 2 APIs | ${cpuRow('api2', 'trivial')} |`,
          `| cache hits, 1 API | ${cpuRow('api1', 'hit')} |`,
          `| cache hits, 2 APIs | ${cpuRow('api2', 'hit')} |`,
          `| cache hits, 1 API at ${o.callers / 2} callers (each replica's share; ${spreadOf(r('api1half.hit.jobsPerS'), perS)}) | ${cpuRow('api1half', 'hit')} |`,
        ].join('\n'),
        this.fleet.section(),
      ],
      data: { iterations: this.iterations, ...this.rounds.all() },
    };
  }

  async close(): Promise<void> {
    await this.endPass();
  }
}

function stack(apis: AppProcess[], workers: AppProcess[]): Stack {
  return { apis, workers, clients: apis.map((api) => new HttpClient(api.url, 64)) };
}

async function until(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`replicas: timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** `callers` closed loops of `task` until stop() is called; stop() waits for the loops to end. */
function backgroundLoad(callers: number, task: (i: number) => Promise<unknown>): { stop(): Promise<{ done: number; errors: string[] }> } {
  let stopped = false;
  let next = 0;
  let done = 0;
  const errors: string[] = [];
  const loops = Array.from({ length: callers }, async () => {
    while (!stopped) {
      try {
        await task(next++);
        done++;
      } catch (error) {
        errors.push(error instanceof Error ? error.message : String(error));
      }
    }
  });
  return {
    stop: async () => {
      stopped = true;
      await Promise.all(loops);
      return { done, errors };
    },
  };
}

/** Reads a Server-Sent Events stream until the server ends it; each event's name and data. */
function readEvents(url: string, timeoutMs: number): Promise<Array<{ event: string; data: string }>> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { ...keyHeader(url), accept: 'text/event-stream' }, timeout: timeoutMs }, (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        reject(new Error(`replicas: GET ${url} answered HTTP ${res.statusCode}`));
        return;
      }
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('error', reject);
      res.on('end', () => {
        const events = text
          .split('\n\n')
          .map((block) => {
            const field = (name: string) => block.split('\n').find((line) => line.startsWith(`${name}: `))?.slice(name.length + 2);
            return { event: field('event') ?? '', data: field('data') ?? '' };
          })
          .filter((e) => e.event);
        resolve(events);
      });
    });
    req.on('timeout', () => req.destroy(new Error(`replicas: ${url} did not end within ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end();
  });
}
