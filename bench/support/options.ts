import { existsSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import type { JobDefinition } from '../../libs/jobs/src/define-job';
import { coreJobs } from '../../libs/jobs/src/registry';

/**
 * The scenarios `npm run bench` runs by default, in order; `payload` and `listing` are extras, run on
 * request (`listing` writes a million jobs into Redis, ~20 minutes on a loaded host, and starts a stack
 * of its own even in smoke mode).
 */
export const SCENARIOS = ['isolation', 'cpu', 'overhead', 'cache', 'singleFlight', 'adapters', 'batch', 'peers', 'seeds', 'replicas', 'cost', 'files', 'fairness'] as const;
export const EXTRA_SCENARIOS = ['payload', 'listing'] as const;
export type ScenarioName = (typeof SCENARIOS)[number] | (typeof EXTRA_SCENARIOS)[number];

/** Every knob of a run. Full runs take ~20 minutes here (cost fills a 1M-job queue); smoke runs in seconds and asserts nothing. */
export interface BenchOptions {
  smoke: boolean;
  /** The scenario list runs this many times back to back; memory is compared across passes. */
  passes: number;
  /** Alternating rounds per scenario in each pass; ratios are the median over all rounds. */
  roundsPerPass: number;
  scenarios: ScenarioName[];
  /** The repository root. */
  root: string;
  /** The built apps (`nest build` output); BENCH_DIST points at a variant build to compare. */
  dist: string;
  /** A build of the previous commit (BENCH_BEFORE_DIST): the `replicas` fleet legs run it beside `dist`, round by round. */
  beforeDist?: string;
  resultsDir: string;
  /** Use this Redis instead of starting one (keys go under a unique prefix and are deleted afterwards). */
  redisUrl?: string;
  /** Pool threads of the template's worker, and threads of raw piscina. */
  threads: number;
  /** Extra env for the template's apps, for trying tuning variants (BENCH_APP_ENV="WORKER_NICE=0,…"). */
  appEnv: Record<string, string>;
  /** Node flags for the template's apps (BENCH_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof"). */
  nodeArgs: string[];
  logLevel: string;
  /** Target duration of the CPU job (pbkdf2 iterations are calibrated to it). */
  cpuJobMs: number;
  isolation: { connections: number; idleS: number; saturatedS: number; saturators: number; jobMs: number; fixedRate: number; fixedS: number };
  cpu: { jobs: number; clients: number };
  overhead: { clients: number; durationS: number; sequential: number };
  cache: { connections: number; durationS: number; sequential: number };
  singleFlight: { callers: number; jobMs: number };
  adapters: { connections: number; durationS: number };
  /** Jobs per leg, items per batch, and the callers of each side. */
  batch: { jobs: number; size: number; callers: number; singleCallers: number };
  payload: { sizes: number[] };
  /**
   * Template vs the @nestjs/bullmq peers: trivial jobs, one caller, CPU jobs, cache hits (`hitCallers`), and GET while CPU jobs
   * are fed; the template and the equal-guarantee peer at each of `replicas` API replicas (smoke: 1 only, which saves the
   * bench smoke of `npm test` three Nest start-ups; a full run goes through the same code with more).
   */
  peers: { callers: number; durationS: number; sequential: number; cpuJobs: number; cpuCallers: number; hitCallers: number; connections: number; idleS: number; busyS: number; feeders: number; replicas: number[] };
  /** GET load (connections, idle and loaded seconds) beside CPU callers; then jobs × callers for jobs/s. */
  seeds: { connections: number; idleS: number; busyS: number; callers: number; cpuJobs: number; cpuCallers: number };
  /**
   * pbkdf2 jobs per worker leg and their callers; callers and seconds of the trivial and cache-hit legs; single-flight callers;
   * the fleet leg's numbers of API replicas (one serving, the rest idle) and its seconds per leg.
   */
  replicas: { cpuJobs: number; cpuCallers: number; callers: number; durationS: number; flightCallers: number; fleetSizes: number[]; fleetS: number };
  /**
   * Memory: up to `jobs` jobs per type and round, fewer when a type's runs would take more than
   * `runBudgetMs` of pool time (each job's run plus `perJobMs` of pipeline). Depths: jobs waiting;
   * at each, `reps` × (`submits` POSTs from 1 caller and twice as many from `callers`, then the
   * worker taking `pickup` jobs); the queue is filled `chunk` jobs per addBulk.
   */
  cost: { jobs: number; runBudgetMs: number; perJobMs: number; depths: number[]; reps: number; submits: number; callers: number; pickup: number; chunk: number };
  /**
   * Files (thumbnail jobs on the file store vs the base64 peer, uploads vs a bare Fastify route):
   * the two image sizes; jobs a side submits for Redis bytes per job (the peer's of the large image
   * fewer: each holds the image in Redis); thumbnails per leg and their callers; concurrent uploads
   * and their size for MB/s; concurrent uploads and their size while the API's RSS is sampled;
   * GET connections and seconds idle and with `feeders` callers of large-image thumbnails.
   */
  files: {
    smallBytes: number;
    largeBytes: number;
    memoryJobs: number;
    peerLargeJobs: number;
    thumbs: number;
    thumbCallers: number;
    uploads: number;
    uploadBytes: number;
    rssUploads: number;
    rssUploadBytes: number;
    connections: number;
    idleS: number;
    busyS: number;
    feeders: number;
  };
  /**
   * Fair share between callers: A's jobs and B's behind them (~`jobMs` each); callers and seconds of the
   * share and cap legs; seconds of each cost leg (six a round) and its connections; seconds of the fault leg and how often
   * its second worker is killed (0: never); workers of the cap and fault legs (1: no second worker);
   * the legs run (BENCH_FAIRNESS_LEGS, default all).
   */
  fairness: { legs: string[]; aJobs: number; bJobs: number; jobMs: number; callers: number; shareS: number; capS: number; costS: number; costConnections: number; faultS: number; killEveryMs: number; workers: number };
  /**
   * Listing and dead letters (#30): `jobs` finished jobs across `callers` API keys, each tagged one of
   * `tags`, written `chunk` per pipeline; `requests` GETs of each kind per round; `deadLetters` replayed;
   * rounds, seconds and connections of the leg of trivial jobs/s with the indexes on and off (JOB_LISTING).
   */
  listing: { jobs: number; callers: number; tags: number; chunk: number; requests: number; deadLetters: number; throughputRounds: number; throughputS: number; connections: number };
  /** Memory soak after the passes: chunks × jobs per chunk (0 chunks: none). */
  soak: { chunks: number; perChunk: number };
}

function envList(value: string | undefined): string[] {
  return (value ?? '').split(',').map((s) => s.trim()).filter(Boolean);
}

function parseAppEnv(value: string | undefined): Record<string, string> {
  const env: Record<string, string> = {};
  for (const pair of envList(value)) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new Error(`BENCH_APP_ENV: "${pair}" is not NAME=value`);
    env[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return env;
}

const FAIRNESS_LEGS = ['starvation', 'share', 'cost', 'cap', 'faults'];

function fairnessLegs(value: string | undefined): string[] {
  const legs = envList(value);
  for (const leg of legs) if (!FAIRNESS_LEGS.includes(leg)) throw new Error(`BENCH_FAIRNESS_LEGS: no leg "${leg}" (known: ${FAIRNESS_LEGS.join(', ')})`);
  return legs.length > 0 ? legs : FAIRNESS_LEGS;
}

function beforeDist(value: string | undefined): string | undefined {
  if (!value) return undefined;
  if (!isAbsolute(value) || !existsSync(join(value, 'apps', 'api', 'src', 'main.js'))) {
    throw new Error(`BENCH_BEFORE_DIST: "${value}" is not an absolute path to a build (no apps/api/src/main.js under it; \`npx nest build\` in a worktree of the previous commit makes one)`);
  }
  return value;
}

/**
 * The default scenarios a build can run: `batch` needs the batch capability, which a service may
 * have deleted (docs/development.md#removing-a-capability); `files` an image type (imageJob).
 */
export function defaultScenarios(dist: string): ScenarioName[] {
  return SCENARIOS.filter((name) => (name !== 'batch' || existsSync(join(dist, 'apps', 'api', 'src', 'batch'))) && (name !== 'files' || imageJob() !== undefined));
}

/**
 * The shipped type the `files` scenario measures: one that takes one file, a JPEG among its types,
 * and returns files (the `thumbnail` example, found by its shape: a service may remove it with
 * `npm run remove:job`, and the scenario then leaves itself out); undefined when there is none.
 */
export function imageJob(): JobDefinition | undefined {
  return coreJobs.find((def) => {
    const files = Object.values(def.files);
    return def.returnsFiles && files.length === 1 && files[0].accept.includes('image/jpeg');
  });
}

export function loadOptions(env: NodeJS.ProcessEnv = process.env, argv: readonly string[] = process.argv): BenchOptions {
  const smoke = argv.includes('--smoke') || env.BENCH_SMOKE === '1' || env.BENCH_SMOKE === 'true';
  const root = env.BENCH_ROOT ?? process.cwd();
  const dist = env.BENCH_DIST ?? join(root, 'dist');
  const wanted = envList(env.BENCH_SCENARIOS);
  const known = new Set<string>([...defaultScenarios(dist), ...EXTRA_SCENARIOS]);
  for (const name of wanted) if (!known.has(name)) throw new Error(`BENCH_SCENARIOS: no scenario "${name}" for this build (known: ${[...known].join(', ')})`);
  const int = (name: string, fallback: number) => (env[name] ? Number(env[name]) : fallback);
  return {
    smoke,
    passes: int('BENCH_PASSES', smoke ? 1 : 2),
    roundsPerPass: int('BENCH_ROUNDS', smoke ? 1 : 2),
    scenarios: (wanted.length > 0 ? wanted : defaultScenarios(dist)) as ScenarioName[],
    root,
    dist,
    beforeDist: beforeDist(env.BENCH_BEFORE_DIST),
    resultsDir: env.BENCH_RESULTS_DIR ?? join(root, 'bench', 'results', smoke ? 'smoke' : ''),
    redisUrl: env.REDIS_URL || undefined,
    threads: int('BENCH_THREADS', 2),
    appEnv: parseAppEnv(env.BENCH_APP_ENV),
    nodeArgs: (env.BENCH_NODE_ARGS ?? '').split(/\s+/).filter(Boolean),
    logLevel: env.BENCH_LOG_LEVEL ?? 'warn',
    cpuJobMs: 25,
    isolation: smoke
      ? { connections: 4, idleS: 0.4, saturatedS: 0.4, saturators: 3, jobMs: 25, fixedRate: 200, fixedS: 0.4 }
      : { connections: 10, idleS: 4, saturatedS: 4, saturators: 6, jobMs: 25, fixedRate: 1000, fixedS: 2 },
    cpu: smoke ? { jobs: 8, clients: 4 } : { jobs: 160, clients: 8 },
    overhead: smoke ? { clients: 32, durationS: 0.4, sequential: 10 } : { clients: 32, durationS: 3, sequential: 150 },
    cache: smoke ? { connections: 8, durationS: 0.4, sequential: 20 } : { connections: 8, durationS: 3, sequential: 400 },
    singleFlight: smoke ? { callers: 100, jobMs: 50 } : { callers: 100, jobMs: 100 },
    adapters: smoke ? { connections: 8, durationS: 0.3 } : { connections: 8, durationS: 2 },
    batch: smoke ? { jobs: 100, size: 50, callers: 2, singleCallers: 8 } : { jobs: 4000, size: 1000, callers: 2, singleCallers: 32 },
    peers: smoke
      ? { callers: 32, durationS: 0.4, sequential: 10, cpuJobs: 8, cpuCallers: 4, hitCallers: 8, connections: 10, idleS: 0.4, busyS: 0.4, feeders: 6, replicas: [1] }
      : { callers: 32, durationS: 3, sequential: 150, cpuJobs: 120, cpuCallers: 8, hitCallers: 8, connections: 10, idleS: 4, busyS: 4, feeders: 6, replicas: [1, 4] },
    seeds: smoke
      ? { connections: 4, idleS: 0.3, busyS: 0.3, callers: 6, cpuJobs: 8, cpuCallers: 4 }
      : { connections: 10, idleS: 2, busyS: 3.5, callers: 6, cpuJobs: 160, cpuCallers: 8 },
    replicas: smoke
      ? { cpuJobs: 8, cpuCallers: 4, callers: 32, durationS: 0.3, flightCallers: 50, fleetSizes: [1, 2], fleetS: 1 }
      : { cpuJobs: 160, cpuCallers: 8, callers: 32, durationS: 2, flightCallers: 50, fleetSizes: [1, 2, 4, 8], fleetS: 3 },
    cost: smoke
      ? { jobs: 100, runBudgetMs: 300, perJobMs: 1, depths: [0, 1000, 5000], reps: 1, submits: 20, callers: 8, pickup: 300, chunk: 1000 }
      : { jobs: 500, runBudgetMs: 1000, perJobMs: 1, depths: [0, 100_000, 1_000_000], reps: 3, submits: 200, callers: 8, pickup: 2000, chunk: 5000 },
    files: smoke
      ? { smallBytes: 8 * 1024, largeBytes: 64 * 1024, memoryJobs: 3, peerLargeJobs: 3, thumbs: 3, thumbCallers: 2, uploads: 2, uploadBytes: 1024 ** 2, rssUploads: 2, rssUploadBytes: 1024 ** 2, connections: 4, idleS: 0.3, busyS: 0.3, feeders: 2 }
      : { smallBytes: 50 * 1024, largeBytes: 5 * 1024 ** 2, memoryJobs: 100, peerLargeJobs: 20, thumbs: 40, thumbCallers: 4, uploads: 8, uploadBytes: 50 * 1024 ** 2, rssUploads: 20, rssUploadBytes: 100 * 1024 ** 2, connections: 10, idleS: 4, busyS: 4, feeders: 4 },
    // why no second worker in smoke mode: its start alone would take longer than the rest of the scenario there.
    fairness: smoke
      ? { legs: fairnessLegs(env.BENCH_FAIRNESS_LEGS), aJobs: 10, bJobs: 2, jobMs: 10, callers: 2, shareS: 0.2, capS: 0.2, costS: 0.2, costConnections: 4, faultS: 0.2, killEveryMs: 0, workers: 1 }
      : { legs: fairnessLegs(env.BENCH_FAIRNESS_LEGS), aJobs: 1000, bJobs: 10, jobMs: 100, callers: 20, shareS: 30, capS: 15, costS: 3, costConnections: 32, faultS: 20, killEveryMs: 5000, workers: 2 },
    listing: smoke
      ? { jobs: 200, callers: 4, tags: 1, chunk: 1000, requests: 5, deadLetters: 50, throughputRounds: 2, throughputS: 0.3, connections: 4 }
      : { jobs: 1_000_000, callers: 1000, tags: 10, chunk: 5000, requests: 200, deadLetters: 10_000, throughputRounds: 6, throughputS: 5, connections: 32 },
    payload: { sizes: smoke ? [1000, 10_000] : [1000, 10_000, 100_000, 300_000] },
    soak: smoke ? { chunks: 2, perChunk: 200 } : { chunks: int('BENCH_SOAK_CHUNKS', 6), perChunk: 5000 },
  };
}
