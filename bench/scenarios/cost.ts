import { Queue } from 'bullmq';
import IORedis from 'ioredis';
import { loadConfig } from '../../libs/config/src/config';
import type { JobDefinition } from '../../libs/jobs/src/define-job';
import { coreJobs } from '../../libs/jobs/src/registry';
import { bullKey, queueKeys, queuePrefix } from '../../libs/queue/src/queue.keys';
import type { AppProcess } from '../../test/support/apps';
import { closedLoop, HttpClient } from '../load/http-client';
import type { ScenarioReport } from '../report/report.types';
import { fillQueue } from '../support/backlog-fill';
import { benchJobs } from '../support/bench-jobs';
import { deleteNow, memoryUsage, readMemory, scanKeys } from '../support/redis-memory';
import { deleteKeys, startTemplate } from '../support/stack';
import { Rounds, summarize } from '../support/stats';
import { jobsPerSubmission, runMs, typicalInputs } from '../support/typical-inputs';
import { costReport, DepthFigures, TypeFigures } from './cost.report';
import { BenchContext, rotate, Scenario, sleep } from './context';

interface View {
  status: string;
}

/**
 * The types whose memory per job is measured: the shipped ones, and bench-sum, the trivial job the
 * depth figures queue. Not the types that take files (thumbnail): a JSON body cannot submit them, and
 * what a job keeps in Redis is then a reference, whatever the file's size.
 */
const TYPES: readonly JobDefinition[] = [...coreJobs, benchJobs.sum].filter((def) => Object.keys(def.files).length === 0);

/** The most jobs waiting that the bench's own stack admits (MAX_BACKLOG), above every depth measured. */
const BACKLOG_LIMIT = 2_000_000;

/**
 * 8. Cost as the work grows, on a stack of its own (own REDIS_PREFIX, MAX_BACKLOG raised):
 * - Redis memory per job of each type and of bench-sum, its first example as the input: queued (the
 *   queues paused), finished and kept for JOB_RETENTION_SECONDS, and its cached result (used_memory deltas);
 * - with 0, 100,000 and 1,000,000 jobs waiting (added straight to the queue as the API adds them):
 *   submit latency, and the rate at which the worker takes jobs from the head of that queue.
 */
export class CostScenario implements Scenario<ScenarioReport> {
  readonly name = 'cost';
  private readonly memory = new Rounds();
  private readonly depth = new Rounds();
  private readonly types = new Map<string, TypeFigures>();
  private readonly depths: DepthFigures[] = [];
  private stack?: { api: AppProcess; worker: AppProcess };
  private connection?: IORedis;
  private readonly queues = new Map<string, Queue>();
  private client?: HttpClient;
  private readonly costPrefix: string;
  private readonly retentionSeconds: number;
  /** `from` of the next bench-sum job of the depth measurements: every one distinct, all equally cheap. */
  private nextFrom = 1;
  /** The slow log's length before the scenario turned it off (own Redis only). */
  private slowlogMaxLen?: string;

  constructor(private readonly ctx: BenchContext) {
    this.costPrefix = `${ctx.prefix}-cost`;
    this.retentionSeconds = loadConfig({ ...ctx.templateEnv, REDIS_PREFIX: this.costPrefix } as NodeJS.ProcessEnv, 'worker').jobRetentionSeconds;
  }

  private get redis(): IORedis {
    return this.ctx.redisClient;
  }

  async beginPass(): Promise<void> {
    if (this.stack) return;
    const { opts, templateEnv, progress } = this.ctx;
    progress.log(`${this.name}: starting an API and a worker of its own (REDIS_PREFIX ${this.costPrefix}, MAX_BACKLOG ${BACKLOG_LIMIT})`);
    this.stack = await startTemplate(
      opts.root,
      // why CACHE_MEMORY_MB=0: rounds resubmit the same inputs after deleting their cache entries;
      // no copy may survive in the API's memory. It changes nothing in Redis.
      { ...templateEnv, REDIS_PREFIX: this.costPrefix, MAX_BACKLOG: String(BACKLOG_LIMIT), CACHE_MEMORY_MB: '0' },
      { dist: opts.dist, nodeArgs: opts.nodeArgs },
    );
    this.connection = new IORedis(this.ctx.redis.url, { maxRetriesPerRequest: null });
    for (const name of new Set(TYPES.map((def) => def.queue))) {
      this.queues.set(name, new Queue(name, { connection: this.connection, prefix: queuePrefix(this.costPrefix, name) }).on('error', () => undefined));
    }
    this.client = new HttpClient(this.stack.api.url, 16);
    if (this.ctx.redis.own) {
      // why: a command slower than 10 ms (a Lua script preempted on 2 shared cores) is copied into
      // the slow log with its arguments, ~1-2 KB an entry up to 128 entries, at random moments.
      this.slowlogMaxLen = String(((await this.redis.config('GET', 'slowlog-max-len')) as string[])[1]);
      await this.redis.config('SET', 'slowlog-max-len', '0');
      await this.redis.call('SLOWLOG', 'RESET');
    }
    for (const def of TYPES) await this.planType(def);
  }

  /** How many jobs of `def` a round submits: `cost.jobs`, fewer if its inputs run out or its runs would take too long. */
  private async planType(def: JobDefinition): Promise<void> {
    const o = this.ctx.opts.cost;
    const example = def.examples[0];
    const costMs = (await runMs(def, example)) + jobsPerSubmission(def, example) * o.perJobMs;
    const affordable = Math.max(10, Math.floor((o.runBudgetMs * this.ctx.opts.threads) / costMs));
    const inputs = typicalInputs(def, Math.min(o.jobs, affordable));
    this.types.set(def.name, { def, inputs, runMs: costMs, jobsPerSubmission: jobsPerSubmission(def, example) });
  }

  async round(round: number, rounds: number): Promise<void> {
    for (const def of rotate(TYPES, round)) {
      const { inputs } = this.types.get(def.name)!;
      this.ctx.progress.step(this.name, round + 1, rounds, `${def.name}: Redis memory of ${inputs.length} jobs queued, finished, cached`);
      await this.measureType(def, inputs);
    }
    // why once, in the last round: filling a million jobs takes about two minutes here (~7,500 jobs/s); each depth has its own repetitions.
    if (round + 1 === rounds) await this.measureDepths();
  }

  private async measureType(def: JobDefinition, inputs: unknown[]): Promise<void> {
    const n = inputs.length;
    await this.pauseAll();
    const m0 = await readMemory(this.redis);
    const e0 = await this.eventsBytes();
    const run = await closedLoop({ concurrency: 16, total: n, task: (i) => this.post(def.name, inputs[i]) });
    if (run.errors.length > 0) throw new Error(`cost: POST /v1/jobs/${def.name}: ${run.errors[0]}`);
    const m1 = await readMemory(this.redis);
    const e1 = await this.eventsBytes();

    await this.resumeAll();
    await this.settled(def.name);
    const m2 = await readMemory(this.redis);
    const e2 = await this.eventsBytes();
    const keys = queueKeys(this.costPrefix);
    const cacheKeys = [...(await scanKeys(this.redis, keys.cacheEntry('*'))), ...(await scanKeys(this.redis, keys.cacheId('*')))];
    const cacheBytes = await memoryUsage(this.redis, cacheKeys);
    await deleteNow(this.redis, cacheKeys);
    const m3 = await readMemory(this.redis);

    // why the events stream apart: BullMQ caps it (~10,000 entries a queue), so it is a fixed cost, not a per-job one.
    this.memory.add(`${def.name}.queued`, (m1.keys - m0.keys - (e1 - e0)) / n);
    this.memory.add(`${def.name}.finished`, (m3.keys - m0.keys - (e2 - e0)) / n);
    this.memory.add(`${def.name}.cached`, (m2.keys - m3.keys) / n);
    this.memory.add(`${def.name}.cachedKeys`, cacheBytes / n);
    this.memory.add(`${def.name}.events`, (e2 - e0) / n);
    this.memory.add('eventsPerEntry', await this.eventsBytesPerEntry());
    await this.emptyQueues();
  }

  private async post(type: string, input: unknown): Promise<void> {
    const reply = await this.client!.json<View>('POST', `/v1/jobs/${type}`, { json: input });
    if (reply.status !== 202 || reply.body?.status !== 'queued') throw new Error(`HTTP ${reply.status}, ${JSON.stringify(reply.body).slice(0, 200)}`);
  }

  /** Waits until every queue is empty; a failed job fails the run (its memory would not be a finished job's). */
  private async settled(what: string): Promise<void> {
    const deadline = Date.now() + 180_000;
    for (;;) {
      let pending = 0;
      for (const queue of this.queues.values()) {
        const counts = await queue.getJobCounts('waiting', 'active', 'prioritized', 'waiting-children', 'delayed', 'failed');
        if (counts.failed > 0) throw new Error(`cost: ${counts.failed} ${what} job(s) failed`);
        pending += counts.waiting + counts.active + counts.prioritized + counts['waiting-children'] + counts.delayed;
      }
      if (pending === 0) return;
      if (Date.now() > deadline) throw new Error(`cost: ${pending} ${what} job(s) still pending after 3 minutes`);
      await sleep(100);
    }
  }

  private async eventsBytes(): Promise<number> {
    return memoryUsage(this.redis, [...this.queues.keys()].map((q) => bullKey(this.costPrefix, q, 'events')));
  }

  private async eventsBytesPerEntry(): Promise<number> {
    const keys = [...this.queues.keys()].map((q) => bullKey(this.costPrefix, q, 'events'));
    const entries = (await Promise.all(keys.map((key) => this.redis.xlen(key)))).reduce((a, b) => a + b, 0);
    return entries > 0 ? (await memoryUsage(this.redis, keys)) / entries : NaN;
  }

  private async pauseAll(): Promise<void> {
    for (const queue of this.queues.values()) await queue.pause();
  }

  private async resumeAll(): Promise<void> {
    for (const queue of this.queues.values()) await queue.resume();
  }

  /**
   * Removes every job and key of the queues (BullMQ's obliterate, which wants them paused), so the next
   * type starts level, and leaves them paused: obliterate deletes the paused flag with the rest.
   */
  private async emptyQueues(): Promise<void> {
    for (const queue of this.queues.values()) {
      await queue.pause();
      await queue.obliterate({ force: true });
      await queue.pause();
    }
  }

  /** Depth figures: one pass over 0 → 100,000 → 1,000,000 waiting (smoke: smaller), several repetitions at each. */
  private async measureDepths(): Promise<void> {
    const { progress } = this.ctx;
    const o = this.ctx.opts.cost;
    const queue = this.queues.get(benchJobs.sum.queue)!;
    await this.emptyQueues();
    const keys = queueKeys(this.costPrefix);
    await Promise.all([deleteKeys(this.redis, keys.cacheEntry('')), deleteKeys(this.redis, keys.cacheId(''))]);
    const base = await readMemory(this.redis);
    for (const depth of o.depths) {
      if (depth > 0) progress.log(`${this.name}: filling the ${benchJobs.sum.queue} queue to ${depth.toLocaleString('en-US')} waiting jobs`);
      const t0 = performance.now();
      const added = await this.topUp(queue, depth);
      const fillPerS = added / ((performance.now() - t0) / 1000);
      const filled = await readMemory(this.redis);
      const figures: DepthFigures = { depth, used: filled.used - base.used, rss: filled.rss, fillPerS: added > 0 ? fillPerS : NaN };
      this.depths.push(figures);
      for (let rep = 0; rep < o.reps; rep++) {
        progress.log(`${this.name}: ${depth.toLocaleString('en-US')} waiting, repetition ${rep + 1}/${o.reps}: submit latency, then worker pickup`);
        await this.topUp(queue, depth);
        const one = await this.submitLatency(1, o.submits);
        const many = await this.submitLatency(o.callers, o.submits * 2);
        this.depth.add(`${depth}.submit1.p50`, one.p50);
        this.depth.add(`${depth}.submit1.p99`, one.p99);
        this.depth.add(`${depth}.submitN.p50`, many.p50);
        this.depth.add(`${depth}.submitN.p99`, many.p99);
        this.depth.add(`${depth}.pickupPerS`, await this.pickup(queue));
      }
    }
    progress.log(`${this.name}: deleting the backlog`);
    await this.pauseAll();
    await deleteKeys(this.redis, this.costPrefix);
  }

  /** Adds jobs at the tail of `queue` until `depth` wait; returns how many it added. */
  private async topUp(queue: Queue, depth: number): Promise<number> {
    const missing = depth - (await queue.getWaitingCount());
    if (missing <= 0) return 0;
    const from = this.nextFrom;
    this.nextFrom += missing;
    await fillQueue(queue, benchJobs.sum, missing, (i) => this.range(from + i), { chunk: this.ctx.opts.cost.chunk, retentionSeconds: this.retentionSeconds, dist: this.ctx.opts.dist });
    return missing;
  }

  /** A trivial bench-sum input: always 10 terms, so a job's work is the same wherever it sits in the queue. */
  private range(k: number): { from: number; to: number } {
    return { from: k * 10, to: k * 10 + 9 };
  }

  /** Latency of `total` POSTs of fresh trivial jobs (no wait) from `callers` callers, the worker paused. */
  private async submitLatency(callers: number, total: number) {
    const run = await closedLoop({ concurrency: callers, total, task: () => this.post(benchJobs.sum.name, this.range(this.nextFrom++)) });
    if (run.errors.length > 0) throw new Error(`cost: submit at depth: ${run.errors[0]}`);
    return summarize(run.latencies);
  }

  /**
   * Jobs/s the worker completes taking `cost.pickup` jobs from the head of `queue`, from resume to
   * the last completion (a fresh burst when the queue is otherwise empty), then pauses it again.
   */
  private async pickup(queue: Queue): Promise<number> {
    const jobs = this.ctx.opts.cost.pickup;
    const waiting = await queue.getWaitingCount();
    if (waiting < jobs) await this.topUp(queue, jobs);
    const completed = bullKey(this.costPrefix, queue.name, 'completed');
    const target = (await this.redis.zcard(completed)) + jobs;
    const t0 = performance.now();
    await queue.resume();
    const deadline = Date.now() + 120_000;
    while ((await this.redis.zcard(completed)) < target) {
      if (Date.now() > deadline) throw new Error('cost: the worker did not take its jobs within 2 minutes');
      await sleep(10);
    }
    const perS = jobs / ((performance.now() - t0) / 1000);
    await queue.pause();
    while ((await queue.getActiveCount()) > 0) await sleep(20);
    return perS;
  }

  result(): ScenarioReport {
    return costReport({
      types: [...this.types.values()],
      memory: this.memory,
      depth: this.depth,
      depths: this.depths,
      retentionSeconds: this.retentionSeconds,
      maxBacklogDefault: loadConfig({} as NodeJS.ProcessEnv, 'worker').maxBacklog,
      ownRedis: this.ctx.redis.own,
      opts: this.ctx.opts.cost,
    });
  }

  async close(): Promise<void> {
    this.client?.close();
    for (const queue of this.queues.values()) await queue.close().catch(() => undefined);
    this.connection?.disconnect();
    await Promise.all([this.stack?.api.stop(), this.stack?.worker.stop()]);
    this.stack = undefined;
    await deleteKeys(this.redis, this.costPrefix).catch(() => undefined);
    if (this.slowlogMaxLen) await this.redis.config('SET', 'slowlog-max-len', this.slowlogMaxLen).catch(() => undefined);
  }
}
