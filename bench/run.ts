import { execFileSync } from 'node:child_process';
import { pbkdf2Sync, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import IORedis from 'ioredis';
import type { AppProcess } from '../test/support/apps';
import { BENCH_API_KEY, BENCH_KEY_ENV, sendKeyTo } from './load/api-key';
import { toMarkdown, RunMeta } from './report/markdown';
import type { ScenarioReport } from './report/report.types';
import { toSvg } from './report/svg';
import { AdaptersScenario } from './scenarios/adapters';
import { BatchScenario } from './scenarios/batch';
import { CacheScenario } from './scenarios/cache';
import { CostScenario } from './scenarios/cost';
import { BenchContext, Scenario, Servers, SharedPeer } from './scenarios/context';
import { CpuScenario } from './scenarios/cpu';
import { FairnessScenario } from './scenarios/fairness';
import { FilesScenario } from './scenarios/files';
import { IsolationScenario } from './scenarios/isolation';
import { ListingScenario } from './scenarios/listing';
import { MemoryRecorder } from './scenarios/memory';
import { OverheadScenario } from './scenarios/overhead';
import { PayloadScenario } from './scenarios/payload';
import { PeersScenario } from './scenarios/peers';
import { SeedsScenario } from './scenarios/seeds';
import { ReplicasScenario } from './scenarios/replicas';
import { SingleFlightScenario } from './scenarios/single-flight';
import { BenchOptions, loadOptions, ScenarioName } from './support/options';
import { Progress } from './support/progress';
import { deleteKeys, Env, IMAGE_ENV, startNode, startRedis, startTemplate } from './support/stack';
import { spread } from './support/stats';

/**
 * `npm run bench`: starts Redis (or uses REDIS_URL), the template's API and worker and the baselines
 * as real processes, runs every scenario in alternating rounds over loopback, and writes
 * bench/results/latest.{json,md,svg}. `BENCH_SMOKE=1` runs the same code with tiny loads.
 */
const SCENARIO_CLASSES: Record<ScenarioName, new (ctx: BenchContext) => Scenario<ScenarioReport>> = {
  isolation: IsolationScenario,
  cpu: CpuScenario,
  overhead: OverheadScenario,
  cache: CacheScenario,
  singleFlight: SingleFlightScenario,
  adapters: AdaptersScenario,
  batch: BatchScenario,
  cost: CostScenario,
  listing: ListingScenario,
  payload: PayloadScenario,
  peers: PeersScenario,
  seeds: SeedsScenario,
  replicas: ReplicasScenario,
  files: FilesScenario,
  fairness: FairnessScenario,
};

/** ms of one pbkdf2-sha512 iteration on this machine, measured once. */
function calibratePbkdf2(): number {
  const per: number[] = [];
  for (let i = 0; i < 5; i++) {
    const t0 = performance.now();
    pbkdf2Sync('calibrate', `salt-${i}`, 20_000, 64, 'sha512');
    per.push((performance.now() - t0) / 20_000);
  }
  return spread(per.slice(1)).median;
}

function gitCommit(root: string): string {
  try {
    const sha = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'apps', 'libs'], { cwd: root, encoding: 'utf8' }).trim();
    return dirty ? `${sha} (apps/libs modified)` : sha;
  } catch {
    return 'unknown';
  }
}

/** Starts what the chosen scenarios need, beside the template (started first: it is what we measure). */
async function startServers(opts: BenchOptions, templateEnv: Env, prefix: string, progress: Progress, stoppers: AppProcess[]): Promise<Servers> {
  progress.log('starting the template: API and worker');
  const { api, worker } = await startTemplate(opts.root, templateEnv, { dist: opts.dist, nodeArgs: opts.nodeArgs });
  stoppers.push(api, worker);
  const servers: Servers = { api, worker };
  const want = new Set(opts.scenarios);
  const script = (path: string) => join(__dirname, path);
  const env: Env = { REDIS_URL: templateEnv.REDIS_URL, NODE_ENV: 'production' };
  const starts: Array<[keyof Servers, Promise<AppProcess>]> = [];
  const start = (key: keyof Servers, path: string, extra: Env) => starts.push([key, startNode(script(path), { ...env, ...extra }, { cwd: opts.root })]);
  if (want.has('isolation')) {
    start('inHandler', 'baselines/baseline.main.js', { BASELINE_MODE: 'inline', REDIS_PREFIX: `${prefix}-inline` });
    start('inProcess', 'baselines/baseline.main.js', { BASELINE_MODE: 'bullmq', REDIS_PREFIX: `${prefix}-inproc` });
  }
  if (want.has('overhead')) start('rawWorker', 'baselines/raw-bullmq.main.js', { REDIS_PREFIX: `${prefix}-raw`, CONCURRENCY: String(opts.threads) });
  if (want.has('cache') || want.has('adapters')) start('plain', 'adapters/plain-http.main.js', {});
  // why the template's env: it is the template's API (from opts.dist) with one bench route added.
  if (want.has('cache')) start('echo', 'adapters/echo-api.main.js', { ...templateEnv, REDIS_PREFIX: `${prefix}-echo`, BENCH_DIST: opts.dist });
  if (want.has('adapters')) {
    start('fastify', 'adapters/adapter.main.js', { ADAPTER: 'fastify' });
    start('express', 'adapters/adapter.main.js', { ADAPTER: 'express' });
  }
  if (want.has('seeds')) {
    start('seedCluster', 'baselines/seed-cluster.main.js', { REDIS_PREFIX: `${prefix}-seed-cluster`, CLUSTER_WORKERS: '2' });
    start('seedPartitioned', 'baselines/seed-partitioned.main.js', { REDIS_PREFIX: `${prefix}-seed-partitioned` });
    start('seedLibuv4', 'baselines/seed-libuv.main.js', { REDIS_PREFIX: `${prefix}-seed-libuv4`, UV_THREADPOOL_SIZE: '4' });
    start('seedLibuv16', 'baselines/seed-libuv.main.js', { REDIS_PREFIX: `${prefix}-seed-libuv16`, UV_THREADPOOL_SIZE: '16' });
  }
  progress.log(`starting ${starts.length} baseline servers: ${starts.map(([k]) => k).join(', ')}`);
  const settled = await Promise.allSettled(starts.map(([, p]) => p));
  settled.forEach((s, i) => {
    if (s.status === 'fulfilled') {
      (servers as unknown as Record<string, AppProcess>)[starts[i][0]] = s.value;
      stoppers.push(s.value);
    }
  });
  // The echo API is the template's, with its key (see createEchoApi).
  if (servers.echo && templateEnv.API_KEYS?.includes(BENCH_API_KEY)) sendKeyTo(servers.echo.url);
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) throw failed.reason;
  return servers;
}

/**
 * The bare peer (Nest + @nestjs/bullmq API and worker, baselines/peer-*.main.ts), which the peers and
 * files scenarios share: two Nest start-ups fewer. Started by the first scenario that asks (not with
 * the other baselines: a dozen start-ups at once on 2 cores miss their timeouts); stopped with them.
 */
async function startSharedPeer(opts: BenchOptions, redisUrl: string, prefix: string, processes: AppProcess[]): Promise<SharedPeer> {
  // why PEER_BODY_LIMIT: the files scenario's images travel base64 in its JSON bodies (thumbnail's 32 MB at most).
  const env: Env = { REDIS_URL: redisUrl, NODE_ENV: 'production', REDIS_PREFIX: `${prefix}-peer`, CONCURRENCY: String(opts.threads), PEER_BODY_LIMIT: String(48 * 1024 ** 2) };
  const script = (name: string) => join(__dirname, 'baselines', name);
  const settled = await Promise.allSettled([
    startNode(script('peer-api.main.js'), env, { cwd: opts.root, kind: 'api', nodeArgs: opts.nodeArgs }),
    startNode(script('peer-worker.main.js'), env, { cwd: opts.root, kind: 'worker', nodeArgs: opts.nodeArgs }),
  ]);
  for (const s of settled) if (s.status === 'fulfilled') processes.push(s.value);
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) throw failed.reason;
  const [api, worker] = settled.map((s) => (s as PromiseFulfilledResult<AppProcess>).value);
  return { api, worker };
}

async function stopProcesses(processes: AppProcess[]): Promise<void> {
  await Promise.all(
    processes.map(async (p) => {
      const killer = setTimeout(() => p.signal('SIGKILL'), 15_000);
      await p.stop('SIGTERM');
      clearTimeout(killer);
    }),
  );
}

async function main(): Promise<void> {
  const opts = loadOptions();
  const progress = new Progress();
  const started = Date.now();
  progress.log(
    `nest-offload bench (${opts.smoke ? 'SMOKE: tiny loads, the numbers mean nothing' : 'full run'}): ` +
      `${opts.scenarios.join(', ')}; ${opts.passes} pass(es) × ${opts.roundsPerPass} round(s); results in ${opts.resultsDir}`,
  );
  const redis = await startRedis(opts.redisUrl);
  progress.log(redis.own ? `started redis-server at ${redis.url}` : 'using the Redis at REDIS_URL');
  const redisClient = new IORedis(redis.url, { maxRetriesPerRequest: 1 });
  const prefix = `bench-${randomBytes(3).toString('hex')}`;
  const processes: AppProcess[] = [];
  const scenarios: Array<Scenario<ScenarioReport>> = [];
  // The template's blob store: a directory of the run's, as `npm start` has one (the files scenario's uploads go there).
  const blobDir = mkdtempSync(join(tmpdir(), `nest-offload-${prefix}-blobs-`));
  let interrupted = false;
  const cleanup = async () => {
    for (const s of scenarios) await s.close?.().catch((e: unknown) => progress.log(`closing ${s.name}: ${String(e)}`));
    await stopProcesses(processes);
    rmSync(blobDir, { recursive: true, force: true });
    if (!redis.own) await deleteKeys(redisClient, prefix).catch(() => undefined);
    redisClient.disconnect();
    await redis.stop();
  };
  process.once('SIGINT', () => {
    interrupted = true;
    progress.log('interrupted: stopping everything the bench started');
    void cleanup().finally(() => process.exit(130));
  });

  try {
    const templateEnv: Env = {
      REDIS_URL: redis.url,
      REDIS_PREFIX: prefix,
      NODE_ENV: 'production',
      ...IMAGE_ENV,
      // why: as in production, with a key: requests authenticated, jobs' owners recorded (bench/load/api-key.ts).
      ...BENCH_KEY_ENV,
      LOG_LEVEL: opts.logLevel,
      WORKER_THREADS: String(opts.threads),
      SHUTDOWN_TIMEOUT_MS: '5000',
      // why a file store: the embedded default, so types that take files run (production needs it said).
      BLOB_STORE_URL: pathToFileURL(blobDir).href,
      BLOB_STORE_ALLOW_FILE: 'true',
      // why: the files scenario's 100 MB uploads, 20 at once, take longer than the default 30 s to receive.
      REQUEST_TIMEOUT_MS: '120000',
      ...opts.appEnv,
    };
    const servers = await startServers(opts, templateEnv, prefix, progress, processes);
    const msPerIteration = calibratePbkdf2();
    progress.log(`pbkdf2-sha512: ${(msPerIteration * 1000).toFixed(2)} µs per iteration here`);
    const memory = new MemoryRecorder(servers);
    let peer: Promise<SharedPeer> | undefined;
    const ctx: BenchContext = {
      opts,
      progress,
      redis,
      redisClient,
      prefix,
      servers,
      templateEnv,
      sharedPeer: () => (peer ??= startSharedPeer(opts, redis.url, prefix, processes)),
      iterationsFor: (ms) => Math.max(1000, Math.round(ms / msPerIteration / 1000) * 1000),
    };
    scenarios.push(...opts.scenarios.map((name) => new SCENARIO_CLASSES[name](ctx)));
    await memory.record('idle, after start-up', 1);

    for (let pass = 1; pass <= opts.passes; pass++) {
      for (const scenario of scenarios) {
        progress.log(`── pass ${pass}/${opts.passes}: ${scenario.name}`);
        await scenario.beginPass?.(pass);
        for (let r = 0; r < opts.roundsPerPass; r++) {
          const round = (pass - 1) * opts.roundsPerPass + r;
          await scenario.round(round, opts.passes * opts.roundsPerPass);
        }
        await scenario.endPass?.(pass);
        await memory.record(`after ${scenario.name}`, pass);
      }
    }

    if (opts.soak.chunks > 0) await memory.soak(progress, opts.soak.chunks, opts.soak.perChunk);

    const reports = [...scenarios.map((s) => s.result()), memory.result()];
    const meta: RunMeta = {
      date: new Date().toISOString().slice(0, 16).replace('T', ' ') + ' UTC',
      mode: opts.smoke ? 'smoke' : 'full',
      passes: opts.passes,
      roundsPerPass: opts.roundsPerPass,
      node: process.version,
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model.trim() ?? 'unknown',
      threads: opts.threads,
      durationS: (Date.now() - started) / 1000,
      commit: gitCommit(opts.root) + (opts.dist === join(opts.root, 'dist') ? '' : ` (apps from ${opts.dist})`),
      redis: redis.own ? 'own redis-server' : 'shared Redis',
      appEnv: opts.appEnv,
    };
    const markdown = toMarkdown(meta, reports);
    mkdirSync(opts.resultsDir, { recursive: true });
    writeFileSync(
      join(opts.resultsDir, 'latest.json'),
      JSON.stringify({ meta, rows: reports.flatMap((r) => r.rows), scenarios: Object.fromEntries(reports.map((r) => [r.key, r.data])) }, null, 2),
    );
    writeFileSync(join(opts.resultsDir, 'latest.md'), markdown);
    writeFileSync(join(opts.resultsDir, 'latest.svg'), toSvg(meta, reports));
    process.stdout.write(`\n${markdown}\n`);
    progress.log(`wrote latest.json, latest.md and latest.svg to ${opts.resultsDir}`);
  } finally {
    if (!interrupted) {
      progress.log('stopping everything the bench started');
      await cleanup();
    }
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error instanceof Error ? error.stack : error);
    process.exit(1);
  },
);
