import type { JobDefinition } from '../../libs/jobs/src/define-job';
import { mb, ms, num, perS, spreadOf } from '../report/format';
import type { Row, ScenarioReport } from '../report/report.types';
import { benchJobs } from '../support/bench-jobs';
import type { BenchOptions } from '../support/options';
import { Rounds, Spread, spread } from '../support/stats';

/** One job type as the cost scenario submits it. */
export interface TypeFigures {
  def: JobDefinition;
  /** Distinct inputs shaped like its first example; their count is the jobs per round. */
  inputs: unknown[];
  /** Estimated ms of pool time per submission (its run here plus the pipeline's per-job cost). */
  runMs: number;
  /** 1, or 1 + its chunks for a fan-out type. */
  jobsPerSubmission: number;
}

/** Redis after the queue was filled to `depth` waiting jobs. */
export interface DepthFigures {
  depth: number;
  /** used_memory above the empty queue, bytes. */
  used: number;
  /** redis-server's RSS, bytes. */
  rss: number;
  /** Jobs added per second straight to BullMQ (addBulk), NaN when nothing was added. */
  fillPerS: number;
}

export interface CostInputs {
  types: TypeFigures[];
  memory: Rounds;
  depth: Rounds;
  depths: DepthFigures[];
  retentionSeconds: number;
  maxBacklogDefault: number;
  ownRedis: boolean;
  opts: BenchOptions['cost'];
}

const SCENARIO = '11. Cost';
const bytes = (n: number) => `${num(n)} B`;
const count = (n: number) => n.toLocaleString('en-US');
const duration = (s: number) => (s >= 3600 ? `${num(s / 3600)} h` : s >= 60 ? `${num(s / 60)} min` : `${num(s)} s`);

/** Per-repetition ratios of a figure at `depth` to the same figure with nothing waiting. */
function depthRatio(depth: Rounds, deep: number, base: number, figure: string): Spread {
  const a = depth.get(`${deep}.${figure}`).values;
  const b = depth.get(`${base}.${figure}`).values;
  return spread(a.map((v, i) => v / b[i]));
}

/** The cost scenario's rows, tables and chart from what it measured. */
export function costReport(c: CostInputs): ScenarioReport {
  const m = (name: string) => c.memory.get(name);
  const d = (name: string) => c.depth.get(name);
  const [base, ...deeper] = c.opts.depths;
  const deepest = c.depths.at(-1);
  const caveat = c.ownRedis ? '' : ' (shared Redis: others\' writes are in the deltas)';
  const rows: Row[] = c.types.map(({ def, inputs, jobsPerSubmission }) => ({
    scenario: SCENARIO,
    measure:
      `Redis per \`${def.name}\` job (first example${jobsPerSubmission > 1 ? `, with its ${jobsPerSubmission - 1} chunk jobs` : ''}; ${inputs.length} jobs): ` +
      `queued · finished, kept ${duration(c.retentionSeconds)} · cached result${caveat}`,
    template: [m(`${def.name}.queued`), m(`${def.name}.finished`), m(`${def.name}.cached`)].map((s) => spreadOf(s, bytes)).join(' · '),
    baseline: '',
  }));
  if (deepest && deepest.depth > 0) {
    rows.push({
      scenario: SCENARIO,
      measure: `Redis used_memory per million queued trivial jobs, measured with ${count(deepest.depth)} waiting (redis-server RSS then)${caveat}`,
      template: `${mb((deepest.used / deepest.depth) * 1e6)} (RSS ${mb(deepest.rss)})`,
      baseline: '',
    });
  }
  for (const deep of deeper) {
    const label = `${count(deep)} waiting ÷ ${count(base)}`;
    rows.push(
      {
        scenario: SCENARIO,
        measure: `submit p50 / p99, 1 caller (POST, no wait): ${label}`,
        template: `${spreadOf(d(`${deep}.submit1.p50`), ms)} / ${spreadOf(d(`${deep}.submit1.p99`), ms)}`,
        baseline: `${spreadOf(d(`${base}.submit1.p50`), ms)} / ${spreadOf(d(`${base}.submit1.p99`), ms)}`,
        ratio: depthRatio(c.depth, deep, base, 'submit1.p50'),
      },
      {
        scenario: SCENARIO,
        measure: `submit p50 / p99, ${c.opts.callers} callers: ${label}`,
        template: `${spreadOf(d(`${deep}.submitN.p50`), ms)} / ${spreadOf(d(`${deep}.submitN.p99`), ms)}`,
        baseline: `${spreadOf(d(`${base}.submitN.p50`), ms)} / ${spreadOf(d(`${base}.submitN.p99`), ms)}`,
        ratio: depthRatio(c.depth, deep, base, 'submitN.p50'),
      },
      {
        scenario: SCENARIO,
        measure: `worker pickup, jobs/s completed from the head of the queue: ${label}`,
        template: spreadOf(d(`${deep}.pickupPerS`), (v) => perS(v, 'jobs/s')),
        baseline: spreadOf(d(`${base}.pickupPerS`), (v) => perS(v, 'jobs/s')),
        ratio: depthRatio(c.depth, deep, base, 'pickupPerS'),
      },
    );
  }
  return {
    key: 'cost',
    title: 'Cost as the work grows',
    rows,
    chart: {
      throughput: {
        title: `${SCENARIO}: worker pickup by jobs waiting`,
        unit: 'jobs/s',
        bars: c.opts.depths.map((depth, i) => ({ label: `${count(depth)} waiting`, value: d(`${depth}.pickupPerS`).median, template: i === 0 })),
      },
      latency: {
        title: `${SCENARIO}: submit p99, 1 caller, by jobs waiting`,
        unit: 'ms',
        bars: c.opts.depths.map((depth, i) => ({ label: `${count(depth)} waiting`, value: d(`${depth}.submit1.p99`).median, template: i === 0 })),
      },
    },
    sections: [memoryTable(c), depthTable(c), sizing(c)],
    data: { memory: c.memory.all(), depth: c.depth.all(), depths: c.depths, jobs: Object.fromEntries(c.types.map((t) => [t.def.name, t.inputs.length])) },
  };
}

function memoryTable(c: CostInputs): string {
  const m = (name: string) => c.memory.get(name).median;
  const perMillion = (n: number) => mb(n * 1e6);
  const lines = [
    `Cost: Redis memory per job: used_memory deltas over the jobs of a round, less client buffers, the script cache and the keyspace's hash-table buckets ` +
      `(8-16 B more per key at scale); median of ${c.memory.get(`${c.types[0]?.def.name}.queued`).values.length} rounds. ` +
      `Inputs: each type's first example, one field changed per job so no two share a job or a cache entry. ` +
      `Finished jobs stay for JOB_RETENTION_SECONDS (${duration(c.retentionSeconds)} here), results in the cache for the type's cacheTtlSeconds. ` +
      `A round of 128 jobs or fewer keeps BullMQ's lists and sorted sets in Redis's compact encodings: read such rows as a floor. ` +
      `BullMQ's events stream is left out (about ${bytes(m('eventsPerEntry'))} an entry, capped near 10,000 entries a queue: a fixed ~${mb(m('eventsPerEntry') * 10_000)} per queue).`,
    '',
    '| Type | Jobs per round | Queued | Finished, kept | Cached result (MEMORY USAGE) | Per million queued | Per million finished + cached |',
    '|---|---|---|---|---|---|---|',
    ...c.types.map(({ def, inputs }) => {
      const n = def.name;
      return `| \`${n}\` | ${inputs.length} | ${bytes(m(`${n}.queued`))} | ${bytes(m(`${n}.finished`))} | ${bytes(m(`${n}.cached`))} (${bytes(m(`${n}.cachedKeys`))}) | ${perMillion(m(`${n}.queued`))} | ${perMillion(m(`${n}.finished`) + m(`${n}.cached`))} |`;
    }),
  ];
  return lines.join('\n');
}

function depthTable(c: CostInputs): string {
  const d = (name: string) => c.depth.get(name);
  const lines = [
    `Cost: a deep queue. Trivial \`bench-sum\` jobs (10 terms each, so every job is the same work) added straight to BullMQ with the API's job data and options; ` +
      `submit latency with the worker paused (${c.opts.submits} POSTs from 1 caller, ${c.opts.submits * 2} from ${c.opts.callers}); pickup: ${count(c.opts.pickup)} jobs ` +
      `taken from the head of the queue, resume to last completion (with nothing waiting: a burst of ${count(c.opts.pickup)} added at once); ${c.opts.reps} repetitions at each depth.`,
    '',
    '| Waiting | Redis used_memory (above empty) | redis-server RSS | addBulk fill | Submit p50 / p99, 1 caller | Submit p50 / p99, ' + c.opts.callers + ' callers | Pickup |',
    '|---|---|---|---|---|---|---|',
    ...c.depths.map(
      ({ depth, used, rss, fillPerS }) =>
        `| ${count(depth)} | ${mb(used)} | ${mb(rss)} | ${Number.isFinite(fillPerS) ? perS(fillPerS, 'jobs/s') : '–'} | ` +
        `${spreadOf(d(`${depth}.submit1.p50`), ms)} / ${spreadOf(d(`${depth}.submit1.p99`), ms)} | ` +
        `${spreadOf(d(`${depth}.submitN.p50`), ms)} / ${spreadOf(d(`${depth}.submitN.p99`), ms)} | ${spreadOf(d(`${depth}.pickupPerS`), (v) => perS(v, 'jobs/s'))} |`,
    ),
  ];
  return lines.join('\n');
}

/** What a user sizes Redis by, and what the measured numbers say about MAX_BACKLOG's default. */
function sizing(c: CostInputs): string {
  const m = (name: string) => c.memory.get(name).median;
  const deepest = c.depths.at(-1);
  const smallestQueued = Math.min(...c.types.map((t) => m(`${t.def.name}.queued`)));
  const largestQueued = Math.max(...c.types.map((t) => m(`${t.def.name}.queued`)));
  const largestKept = Math.max(...c.types.map((t) => m(`${t.def.name}.finished`) + m(`${t.def.name}.cached`)));
  const pickup = c.depth.get(`${c.opts.depths[0]}.pickupPerS`).median;
  const backlog = c.maxBacklogDefault;
  const keptTrivial = m(`${benchJobs.sum.name}.finished`) + m(`${benchJobs.sum.name}.cached`);
  return [
    `Cost, sizing: a million queued jobs of these types take ${mb(smallestQueued * 1e6)}–${mb(largestQueued * 1e6)} of Redis` +
      (deepest && deepest.depth > 0 ? ` (${mb((deepest.used / deepest.depth) * 1e6)} measured with ${count(deepest.depth)} trivial jobs waiting, redis-server RSS ${mb(deepest.rss)})` : '') +
      `; a million finished jobs kept for ${duration(c.retentionSeconds)} with their cached results up to ${mb(largestKept * 1e6)} (a fan-out job counts its chunk jobs). ` +
      `MAX_BACKLOG (default ${count(backlog)} a queue) full of the largest queued type: ${mb(largestQueued * backlog)}; ` +
      `this run's worker takes ${perS(pickup, 'trivial jobs/s')}, so it drains that backlog in ${duration(backlog / pickup)} at best. ` +
      `Retention, not the backlog, sets the size: a worker finishing that many jobs a second keeps ${count(Math.round(pickup * c.retentionSeconds))} finished jobs ` +
      `(${duration(c.retentionSeconds)} of them), ${mb(pickup * c.retentionSeconds * keptTrivial)} with their cached results.`,
  ].join('\n');
}
