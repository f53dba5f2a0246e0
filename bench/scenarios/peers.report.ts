import { ms, num, perS, ratio, spreadOf } from '../report/format';
import type { Row, ScenarioReport } from '../report/report.types';
import type { BenchOptions } from '../support/options';
import type { Rounds } from '../support/stats';

const SCENARIO = '8. Peer';

export interface PeersFigures {
  opts: BenchOptions;
  rounds: Rounds;
  iterations: number;
  replicaCounts: number[];
  /** Redis CPU and commands were counted (the bench's own redis-server). */
  redisCounted: boolean;
}

/** The `peers` scenario's rows (against the equal-guarantee peer, then the bare one), its per-process table and chart. */
export function peersReport({ opts, rounds, iterations, replicaCounts, redisCounted }: PeersFigures): ScenarioReport {
  const r = (name: string) => rounds.get(name);
  const o = opts.peers;
  const jobs = (v: number) => perS(v, 'jobs/s');
  const apis = (n: number) => `${n} API${n > 1 ? 's' : ''}`;
  const fleet = `APIs + worker${redisCounted ? ' + Redis' : ''}`;
  const iso = (k: string) => `${ratio(r(`${k}.isolation`))} (${perS(r(`${k}.busy.rps`).median)} busy / ${perS(r(`${k}.idle.rps`).median)} idle)`;
  const loop = (k: string) => `${spreadOf(r(`${k}.busy.loopP99`), ms)} busy / ${spreadOf(r(`${k}.idle.loopP99`), ms)} idle`;
  const rows: Row[] = [];

  for (const n of replicaCounts) {
    const spread = n > 1 ? `, ${o.callers} callers over ${apis(n)} round-robin` : `, ${o.callers} callers, 1 API`;
    for (const [k, peer] of [['template', 'guarded'], ['inline', 'guarded-inline']] as const) {
      const type = k === 'inline' ? 'inline `bench-sum-inline`' : '`bench-sum` (pool thread)';
      const t = `${k}.${n}`;
      const g = `${peer}.${n}`;
      const vs = `vsGuarded.${t}`;
      const which = k === 'inline' ? 'equal-guarantee peer, on its event loop' : 'equal-guarantee peer, on its piscina pool';
      rows.push(
        {
          scenario: SCENARIO,
          measure: `trivial ${type} jobs/s${spread}, ÷ ${which}`,
          template: spreadOf(r(`${t}.jobsPerS`), jobs),
          baseline: spreadOf(r(`${g}.jobsPerS`), jobs),
          ratio: r(`${vs}.jobsPerS`),
          target: '≥ 1.0',
          met: r(`${vs}.jobsPerS`).median >= 1,
        },
        {
          scenario: SCENARIO,
          measure: `${k === 'inline' ? 'inline ' : ''}submit-and-wait p50, one caller, ${apis(n)}, ÷ ${which} (added latency template − peer: ${spreadOf(r(`${vs}.p50Diff`), ms)})`,
          template: spreadOf(r(`${t}.p50`), ms),
          baseline: spreadOf(r(`${g}.p50`), ms),
          ratio: r(`${vs}.p50Ratio`),
          target: '≤ 1.0',
          met: r(`${vs}.p50Ratio`).median <= 1,
        },
        {
          scenario: SCENARIO,
          measure: `${k === 'inline' ? 'inline ' : ''}fleet CPU per trivial job (${fleet}), ${apis(n)}, ÷ ${which}`,
          template: spreadOf(r(`${t}.cpu.fleet`), ms),
          baseline: spreadOf(r(`${g}.cpu.fleet`), ms),
          ratio: r(`${vs}.fleetCpu`),
          target: '≤ 1.0',
          met: r(`${vs}.fleetCpu`).median <= 1,
        },
      );
    }
    rows.push({
      scenario: SCENARIO,
      measure: `… \`bench-sum\` on a pool thread ÷ the equal-guarantee peer running the same work on its event loop (what the hop costs), ${apis(n)}: jobs/s; p50 ${ratio(r(`vsGuardedLoop.template.${n}.p50Ratio`))}`,
      template: spreadOf(r(`template.${n}.jobsPerS`), jobs),
      baseline: spreadOf(r(`guarded-inline.${n}.jobsPerS`), jobs),
      ratio: r(`vsGuardedLoop.template.${n}.jobsPerS`),
    });
  }
  rows.push(
    {
      scenario: SCENARIO,
      measure: `~${opts.cpuJobMs} ms pbkdf2 jobs/s, ${o.cpuCallers} callers, ÷ equal-guarantee peer`,
      template: spreadOf(r('template.cpuJobsPerS'), jobs),
      baseline: spreadOf(r('guarded.cpuJobsPerS'), jobs),
      ratio: r('guarded.cpuRatio'),
    },
    {
      scenario: SCENARIO,
      measure: `cache hits/s (one input submitted again and again), ${o.hitCallers} callers, 1 API, ÷ equal-guarantee peer`,
      template: spreadOf(r('template.hitsPerS'), (v) => perS(v, 'hits/s')),
      baseline: spreadOf(r('guarded.hitsPerS'), (v) => perS(v, 'hits/s')),
      ratio: r('guarded.hitsRatio'),
    },
    {
      scenario: SCENARIO,
      measure: `trivial \`bench-sum\` jobs/s, ${o.callers} callers, 1 API, ÷ bare peer (what the guarantees cost)`,
      template: spreadOf(r('template.1.jobsPerS'), jobs),
      baseline: spreadOf(r('peer.1.jobsPerS'), jobs),
      ratio: r('throughputRatio'),
    },
    {
      scenario: SCENARIO,
      measure: `… inline \`bench-sum-inline\` (run on the worker's event loop), ÷ bare peer (÷ on a pool thread: ${ratio(r('inline.byThread'))})`,
      template: spreadOf(r('inline.1.jobsPerS'), jobs),
      baseline: spreadOf(r('peer.1.jobsPerS'), jobs),
      ratio: r('inline.throughputRatio'),
      target: '≥ 0.8',
      met: r('inline.throughputRatio').median >= 0.8,
    },
    {
      scenario: SCENARIO,
      measure: `submit-and-wait p50, one caller, ÷ bare peer (added latency template − peer: ${spreadOf(r('p50Diff'), ms)})`,
      template: spreadOf(r('template.1.p50'), ms),
      baseline: spreadOf(r('peer.1.p50'), ms),
      ratio: r('p50Ratio'),
    },
    {
      scenario: SCENARIO,
      measure: `inline p50, one caller, − bare peer's (added latency template − peer: ${spreadOf(r('inline.p50Diff'), ms)})`,
      template: spreadOf(r('inline.1.p50'), ms),
      baseline: spreadOf(r('peer.1.p50'), ms),
      ratio: r('inline.p50Diff'),
      target: '≤ +0.4 ms',
      met: r('inline.p50Diff').median <= 0.4,
    },
    {
      scenario: SCENARIO,
      measure: '… p99, one caller, ÷ bare peer',
      template: spreadOf(r('template.1.p99'), ms),
      baseline: spreadOf(r('peer.1.p99'), ms),
      ratio: r('p99Ratio'),
    },
    {
      scenario: SCENARIO,
      measure: `~${opts.cpuJobMs} ms pbkdf2 jobs/s, ${o.cpuCallers} callers, ${opts.threads} threads vs worker concurrency ${opts.threads}, ÷ bare peer`,
      template: spreadOf(r('template.cpuJobsPerS'), jobs),
      baseline: spreadOf(r('peer.cpuJobsPerS'), jobs),
      ratio: r('cpuRatio'),
      target: '≥ 1.6',
      met: r('cpuRatio').median >= 1.6,
    },
    {
      scenario: SCENARIO,
      measure: `API isolation: GET /v1/jobs/{id} req/s (${o.connections} connections), ${o.feeders} callers feeding CPU jobs ÷ CPU idle; bare peer`,
      template: iso('template'),
      baseline: iso('peer'),
      ratio: r('template.isolation'),
      target: '≥ 0.8 every round',
      met: r('template.isolation').min >= 0.8,
    },
    {
      scenario: SCENARIO,
      measure: 'API event-loop delay p99 (prom-client, 10 ms sampling timer included), fed vs idle; bare peer',
      template: loop('template'),
      baseline: loop('peer'),
    },
    {
      scenario: SCENARIO,
      measure: '… GET p99 latency fed / idle; CPU jobs/s done meanwhile',
      template: `${ms(r('template.busy.p99').median)} / ${ms(r('template.idle.p99').median)}; ${jobs(r('template.busy.cpuJobsPerS').median)}`,
      baseline: `${ms(r('peer.busy.p99').median)} / ${ms(r('peer.idle.p99').median)}; ${jobs(r('peer.busy.cpuJobsPerS').median)}`,
    },
  );

  const cell = (name: string) => (r(name).values.length > 0 ? num(r(name).median) : '–');
  const label = { template: 'template', inline: 'template, inline type', guarded: 'equal-guarantee peer (piscina)', 'guarded-inline': 'equal-guarantee peer, inline type', peer: 'bare peer' } as const;
  const perProcess = [
    `CPU ms per trivial job of each process (/proc schedstat, over a ${o.durationS} s leg at ${o.callers} callers; APIs: all replicas of the leg together) ` +
      `and Redis commands per job (INFO commandstats, scripts' inner commands included)${redisCounted ? '' : ' — Redis not counted: a shared server'}; one caller's p50 / p99; medians of the rounds:`,
    '',
    '| Side | APIs | jobs/s | APIs | worker | Redis | fleet | Redis commands | p50 / p99 | failed jobs (all rounds) |',
    '|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const n of replicaCounts) {
    for (const k of ['template', 'inline', 'guarded', 'guarded-inline', 'peer'] as const) {
      if (k === 'peer' && n > 1) continue;
      const f = (x: string) => cell(`${k}.${n}.${x}`);
      const failed = r(`${k}.${n}.failed`).values.reduce((a, b) => a + b, 0);
      perProcess.push(`| ${label[k]} | ${n} | ${f('jobsPerS')} | ${f('cpu.apis')} | ${f('cpu.worker')} | ${f('cpu.redis')} | ${f('cpu.fleet')} | ${f('commands')} | ${f('p50')} / ${f('p99')} ms | ${failed} |`);
    }
  }
  perProcess.push(
    '',
    `Cache hits (1 API, ${o.hitCallers} callers): template ${cell('template.hitsPerS')} hits/s, API CPU ${cell('template.hit.cpu.api')} ms and ${cell('template.hit.commands')} Redis commands per hit; ` +
      `equal-guarantee peer ${cell('guarded.hitsPerS')} hits/s, ${cell('guarded.hit.cpu.api')} ms, ${cell('guarded.hit.commands')} commands.`,
  );

  return {
    key: 'peers',
    title: 'Peers: NestJS + @nestjs/bullmq, API and worker, bare and with equal guarantees',
    rows,
    chart: {
      throughput: {
        title: `8. Peers: jobs/s (trivial, ${o.callers} callers, 1 API | ~${opts.cpuJobMs} ms CPU)`,
        unit: 'jobs/s',
        bars: [
          { label: 'template trivial', value: r('template.1.jobsPerS').median, template: true },
          { label: 'template inline', value: r('inline.1.jobsPerS').median, template: true },
          { label: 'equal-guarantee peer trivial', value: r('guarded.1.jobsPerS').median, template: false },
          { label: 'equal-guarantee peer inline', value: r('guarded-inline.1.jobsPerS').median, template: false },
          { label: 'bare peer trivial', value: r('peer.1.jobsPerS').median, template: false },
          { label: 'template CPU', value: r('template.cpuJobsPerS').median, template: true },
          { label: 'equal-guarantee peer CPU', value: r('guarded.cpuJobsPerS').median, template: false },
        ],
      },
      latency: {
        title: '8. Peers: one caller, 1 API, p50 | p99',
        unit: 'ms',
        bars: [
          { label: 'template p50', value: r('template.1.p50').median, template: true },
          { label: 'equal-guarantee peer p50', value: r('guarded.1.p50').median, template: false },
          { label: 'template p99', value: r('template.1.p99').median, template: true },
          { label: 'equal-guarantee peer p99', value: r('guarded.1.p99').median, template: false },
        ],
      },
    },
    sections: [
      'The bare peer (bench/baselines/peer-*.ts): a Nest API on Fastify with `BullModule.forRoot/registerQueue` whose POST ' +
        '`queue.add`s the job and, under `Prefer: wait`, answers after `job.waitUntilFinished` on a QueueEvents; a separate Nest ' +
        `worker process whose @nestjs/bullmq processor (concurrency ${opts.threads}) calls the same job \`run\` as the template's pool threads (bench/support/bench-jobs.ts) on its event loop. ` +
        'No key, cache, single flight, cancel checks, idempotency, backlog bound or thread. ' +
        'The equal-guarantee peer (the same processes with PEER_API_KEY; bench/baselines/guarded-*.ts, failed-key.guard.ts, peer-result-cache.ts) adds, each from its usual library: ' +
        'an `x-api-key` guard on `@nestjs/throttler` with `@nest-lab/throttler-storage-redis` (as the template\'s: a wrong key takes one of its address\'s 16 a minute, then gets `429`; ' +
        'a right key is never locked out and costs no Redis round trip), a result cache looked up before the add (`@nestjs/cache-manager` on `@keyv/redis`, filled by its worker), ' +
        `single flight by BullMQ's \`deduplication\` on the result key, waiting through QueueEvents, and a type that is not \`inline\` run on a piscina pool of ${opts.threads} threads (piscina's defaults) from its processor, ` +
        `so its worker's loop stays free as the template's does (\`bench-sum\` there; \`bench-sum-inline\` on its loop, each compared with the template's type of the same kind). With ${apis(Math.max(...replicaCounts))}, the callers go round-robin over the replicas; ` +
        'replicas a leg does not use are stopped (SIGSTOP) meanwhile. The bare peer runs with one API. ' +
        `pbkdf2: ${iterations} iterations, fresh salts.`,
      perProcess.join('\n'),
    ],
    data: { iterations, ...rounds.all() },
  };
}
