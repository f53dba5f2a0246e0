import { randomBytes, randomUUID } from 'node:crypto';
import IORedis from 'ioredis';
import { canonicalJson } from '../../libs/jobs/src/content-key';
import { bullKey, deadLetterKey, deadLettersKey, jobTagsKey, listingKey, queuePrefix } from '../../libs/queue/src/queue.keys';
import type { AppProcess } from '../../test/support/apps';
import { closedLoop, HttpClient } from '../load/http-client';
import { ms, num, perS, ratio, spreadOf } from '../report/format';
import type { Row, ScenarioReport } from '../report/report.types';
import { benchJobs } from '../support/bench-jobs';
import { deleteKeys, park, redisCommandCount, resume, startTemplate } from '../support/stack';
import { percentile, Rounds } from '../support/stats';
import { BenchContext, nextTrivial, rotate, Scenario, sleep } from './context';

/** The listing index written (JOB_LISTING=on, the default) or not (off). */
type Side = 'on' | 'off';

interface Page {
  items: Array<{ id: string }>;
  next: string | null;
}

interface Replay {
  replayed: number;
  jobs: string[];
  originals: string[];
  skipped: unknown[];
}

/** The issue's target for GET /v1/jobs?limit=50 and ?tag= with a million finished jobs (p95). */
const P95_TARGET_MS = 50;
/** The issue's target for trivial jobs/s with the listing index on, as a share of off. */
const THROUGHPUT_TARGET = 0.95;

/**
 * 9. Listing and dead letters (#30), on a stack of its own (own REDIS_PREFIX, an API key for each of the
 * `callers` and an admin key): `jobs` finished jobs across the callers, each tagged one of `tags` tags, written straight
 * into Redis as the API and the worker leave them (BullMQ's job hash and completed set, the caller's,
 * every caller's and the tag's listing entries, the job's tags); then sequential GET /v1/jobs?limit=50
 * and ?tag=…&limit=50 of random callers (p50, p95); then `deadLetters` dead letters of bench-sum
 * (written as a worker keeps them) replayed by two admin clients at once, 1,000 per request, until
 * none is left: each must be replayed once and run once, and a second replay must find none.
 * Before the fill, trivial bench-sum jobs/s (Prefer: wait, `connections` connections, each job from
 * one of the callers, for `throughputS`) on this stack (the index on) and on a second one with
 * JOB_LISTING=off (own prefix, same keys), the side sitting out parked, `throughputRounds` rounds
 * with the order alternating: on ÷ off, and Redis commands per job on the run's own redis-server.
 */
export class ListingScenario implements Scenario<ScenarioReport> {
  readonly name = 'listing';
  private stack?: { api: AppProcess; worker: AppProcess };
  /** The stack with JOB_LISTING=off, for the throughput leg. */
  private offStack?: { api: AppProcess; worker: AppProcess };
  private client?: HttpClient;
  /** The throughput leg's clients, one per side, of `connections` connections each. */
  private loadClients?: Record<Side, HttpClient>;
  private readonly rounds = new Rounds();
  private connection?: IORedis;
  private readonly prefix: string;
  private readonly keys: string[] = [];
  private readonly admin = randomBytes(32).toString('hex');
  private readonly latencies = { all: [] as number[], tag: [] as number[] };
  private filled = { jobs: 0, ms: 0 };
  /** Replays measured so far: each uses inputs of its own, so none is a cache hit of an earlier one. */
  private replays = 0;
  private replay = { deadLetters: 0, replayed: 0, distinctJobs: 0, ran: 0, again: -1, ms: 0, requests: 0 };

  constructor(private readonly ctx: BenchContext) {
    this.prefix = `${ctx.prefix}-listing`;
  }

  private get o() {
    return this.ctx.opts.listing;
  }

  async beginPass(): Promise<void> {
    if (this.stack) return;
    const { opts, templateEnv, progress } = this.ctx;
    for (let i = 0; i < this.o.callers; i++) this.keys.push(randomBytes(32).toString('hex'));
    progress.log(`${this.name}: starting an API and a worker of its own (REDIS_PREFIX ${this.prefix}, ${this.keys.length} callers' API keys), and another pair with JOB_LISTING=off`);
    const env = {
      ...templateEnv,
      REDIS_PREFIX: this.prefix,
      API_KEYS: this.keys.map((key, i) => `c${i}=${key}`).join(','),
      ADMIN_API_KEYS: `ops=${this.admin}`,
      MAX_BACKLOG: String(Math.max(100_000, this.o.deadLetters * 2)),
    };
    const start = (extra: Record<string, string>) => startTemplate(opts.root, { ...env, ...extra }, { dist: opts.dist, nodeArgs: opts.nodeArgs });
    // why both at once: an API or worker that fails to start must not leave the other stack running.
    const [on, off] = await Promise.allSettled([start({}), start({ REDIS_PREFIX: `${this.prefix}-off`, JOB_LISTING: 'off' })]);
    this.stack = on.status === 'fulfilled' ? on.value : undefined;
    this.offStack = off.status === 'fulfilled' ? off.value : undefined;
    if (on.status === 'rejected' || off.status === 'rejected') throw (on.status === 'rejected' ? on.reason : (off as PromiseRejectedResult).reason) as Error;
    this.client = new HttpClient(this.stack!.api.url, 8);
    this.loadClients = { on: new HttpClient(this.stack!.api.url, this.o.connections), off: new HttpClient(this.offStack!.api.url, this.o.connections) };
    this.connection = new IORedis(this.ctx.redis.url, { maxRetriesPerRequest: null });
    await this.compareThroughput();
    progress.log(`${this.name}: writing ${num(this.o.jobs)} finished jobs across ${this.o.callers} callers straight into Redis`);
    const t0 = performance.now();
    await this.fill();
    this.filled = { jobs: this.o.jobs, ms: performance.now() - t0 };
  }

  /** The finished jobs and their listing entries, `chunk` jobs per pipeline. */
  private async fill(): Promise<void> {
    const redis = this.connection!;
    const def = benchJobs.sum;
    const queue = def.queue;
    const base = Date.now() - this.o.jobs;
    const data = JSON.stringify({ inputJson: '{"from":1,"to":10}', version: def.version, key: 'bench-listing' });
    let writing: Promise<unknown> = Promise.resolve();
    for (let start = 0; start < this.o.jobs; start += this.o.chunk) {
      const pipeline = redis.pipeline();
      for (let i = start; i < Math.min(this.o.jobs, start + this.o.chunk); i++) {
        const id = randomUUID();
        const scope = `key:c${i % this.o.callers}`;
        const tag = `t${Math.floor(i / this.o.callers) % this.o.tags}`;
        const at = base + i;
        pipeline.hset(`${queuePrefix(this.prefix, queue)}:${queue}:${id}`, 'name', def.name, 'data', data, 'opts', '{}', 'timestamp', at, 'processedOn', at, 'finishedOn', at, 'returnvalue', '55', 'attemptsMade', 1, 'ats', 1);
        pipeline.zadd(bullKey(this.prefix, queue, 'completed'), at, id);
        pipeline.zadd(listingKey(this.prefix, queue, scope), at, id);
        pipeline.zadd(listingKey(this.prefix, queue), at, id);
        pipeline.zadd(listingKey(this.prefix, queue, scope, tag), at, id);
        pipeline.hset(jobTagsKey(this.prefix, queue, id), scope, tag);
      }
      await writing;
      writing = pipeline.exec();
    }
    await writing;
  }

  /**
   * `throughputRounds` rounds of the throughput leg on each side, the order alternating, after a
   * warm-up of each. why before the fill: both stacks' Redis then differ by the index alone (the
   * million finished jobs are the on stack's only; their index entries' cost is O(log n) per write).
   */
  private async compareThroughput(): Promise<void> {
    const { progress, opts } = this.ctx;
    // why a warm-up: jobs/s of a cold API and worker grows over its first seconds (JIT, pools).
    if (!opts.smoke) for (const side of ['on', 'off'] as const) await this.throughput(side, false);
    const last = (name: string) => this.rounds.get(name).values.at(-1)!;
    for (let round = 0; round < this.o.throughputRounds; round++) {
      for (const side of rotate(['on', 'off'] as const, round)) {
        progress.step(this.name, round + 1, this.o.throughputRounds, `trivial jobs/s, listing index ${side}`);
        await this.throughput(side);
      }
      this.rounds.add('throughput.ratio', last('throughput.on.perS') / last('throughput.off.perS'));
      this.rounds.add('commands.ratio', last('throughput.on.commands') / last('throughput.off.commands'));
    }
  }

  async round(round: number, rounds: number): Promise<void> {
    const { progress } = this.ctx;
    progress.step(this.name, round + 1, rounds, `GET /v1/jobs?limit=50 and ?tag=, ${this.o.requests} each`);
    for (let i = 0; i < this.o.requests; i++) {
      const caller = Math.floor(Math.random() * this.keys.length);
      this.latencies.all.push(await this.timedPage(caller, '/v1/jobs?limit=50'));
      this.latencies.tag.push(await this.timedPage(caller, `/v1/jobs?limit=50&tag=t${Math.floor(Math.random() * this.o.tags)}`));
    }
    if (round + 1 === rounds) {
      progress.step(this.name, round + 1, rounds, `replaying ${this.o.deadLetters.toLocaleString('en-US')} dead letters`);
      await this.measureReplay();
    }
  }

  /**
   * Trivial bench-sum jobs, each submitted with Prefer: wait by one of the keyed callers (so the API
   * writes the job's listing entries and owners, and the worker its end), on `side`'s stack for
   * `throughputS`, the other stack parked: jobs/s and Redis commands per job.
   */
  private async throughput(side: Side, measure = true): Promise<void> {
    const parked = side === 'on' ? this.offStack! : this.stack!;
    const client = this.loadClients![side];
    const own = this.ctx.redis.own;
    park([parked.api, parked.worker]);
    try {
      const before = own ? await redisCommandCount(this.connection!) : NaN;
      const loop = await closedLoop({
        concurrency: this.o.connections,
        durationMs: this.o.throughputS * 1000,
        task: async (i) => {
          const reply = await client.json<{ status?: string }>('POST', `/v1/jobs/${benchJobs.sum.name}`, { json: nextTrivial(), headers: { 'x-api-key': this.keys[i % this.keys.length], prefer: 'wait=30' } });
          if (reply.body?.status !== 'completed') throw new Error(`HTTP ${reply.status} ${JSON.stringify(reply.body)}`);
        },
      });
      if (loop.errors.length > 0) throw new Error(`${this.name}: trivial jobs/s, listing ${side}: ${loop.errors[0]}`);
      // why after a pause: the worker's writes at a job's end are not awaited by anyone.
      await sleep(200);
      const commands = own ? ((await redisCommandCount(this.connection!)) - before) / loop.results.length : NaN;
      if (!measure) return;
      const perSecond = loop.results.length / (loop.elapsedMs / 1000);
      this.rounds.add(`throughput.${side}.perS`, perSecond);
      this.rounds.add(`throughput.${side}.commands`, commands);
      this.ctx.progress.log(`  ${num(perSecond)} jobs/s${own ? `, ${num(commands)} Redis commands per job` : ''}`);
    } finally {
      resume([parked.api, parked.worker]);
    }
  }

  private async timedPage(caller: number, path: string): Promise<number> {
    const t0 = performance.now();
    const reply = await this.client!.json<Page>('GET', path, { headers: { 'x-api-key': this.keys[caller] } });
    const took = performance.now() - t0;
    const expected = Math.min(50, Math.floor(this.o.jobs / this.o.callers / (path.includes('tag=') ? this.o.tags : 1)));
    if (reply.status !== 200 || reply.body.items.length !== expected) throw new Error(`listing: GET ${path}: HTTP ${reply.status}, ${reply.body?.items?.length} items, expected ${expected}`);
    return took;
  }

  /** Dead letters of bench-sum (distinct inputs, each a caller's), replayed by two admin clients at once until none is left. */
  private async measureReplay(): Promise<void> {
    const redis = this.connection!;
    const def = benchJobs.sum;
    const queue = def.queue;
    const now = Date.now();
    const base = 50_000_000_000 + this.replays++ * 1_000_000_000;
    const pipeline = redis.pipeline();
    for (let i = 0; i < this.o.deadLetters; i++) {
      const id = randomUUID();
      const key = deadLetterKey(this.prefix, queue, id);
      const input = canonicalJson(def.input.parse({ from: base + i * 10, to: base + i * 10 + 9 }));
      pipeline.hset(key, 'type', def.name, 'version', def.version, 'input', input, 'code', 'JOB_FAILED', 'message', 'bench: failed on purpose', 'attempts', 1, 'createdAt', now, 'failedAt', now, 'owners', `key:c${i % this.o.callers}`);
      pipeline.expire(key, 3600);
      pipeline.zadd(deadLettersKey(this.prefix, queue), now - i, id);
    }
    await pipeline.exec();
    const completed = bullKey(this.prefix, queue, 'completed');
    const before = await redis.zcard(completed);
    const admin = { 'x-api-key': this.admin };
    const replays: Replay[] = [];
    const t0 = performance.now();
    await Promise.all(
      [0, 1].map(async () => {
        for (;;) {
          const reply = await this.client!.json<Replay>('POST', '/admin/dead-letters/replay', { json: { type: def.name, limit: 1000 }, headers: admin, timeoutMs: 120_000 });
          if (reply.status !== 200) throw new Error(`listing: replay: HTTP ${reply.status} ${JSON.stringify(reply.body).slice(0, 200)}`);
          replays.push(reply.body);
          if (reply.body.replayed === 0 && reply.body.skipped.length === 0) return;
          if (reply.body.skipped.length > 0) throw new Error(`listing: replay skipped ${reply.body.skipped.length}: ${JSON.stringify(reply.body.skipped[0])}`);
        }
      }),
    );
    const took = performance.now() - t0;
    const again = await this.client!.json<Replay>('POST', '/admin/dead-letters/replay', { json: { type: def.name, limit: 1000 }, headers: admin });
    const originals = replays.flatMap((r) => r.originals);
    const jobs = new Set(replays.flatMap((r) => r.jobs));
    // Each new job runs once: the completed set grows by exactly one per dead letter.
    const deadline = Date.now() + 300_000;
    while ((await redis.zcard(completed)) < before + this.o.deadLetters && Date.now() < deadline) await sleep(100);
    await sleep(500); // a job run twice would show as a completed set larger than that
    const ran = (await redis.zcard(completed)) - before;
    this.replay = { deadLetters: this.o.deadLetters, replayed: new Set(originals).size === originals.length ? originals.length : -1, distinctJobs: jobs.size, ran, again: again.body.replayed, ms: took, requests: replays.length };
  }

  result(): ScenarioReport {
    const p = (values: number[], q: number) => percentile(values, q);
    const r = this.replay;
    const once = r.replayed === r.deadLetters && r.distinctJobs === r.deadLetters && r.ran === r.deadLetters && r.again === 0;
    const t = (name: string) => this.rounds.get(name);
    const rows: Row[] = [
      {
        scenario: 'listing',
        measure: `trivial jobs/s, ${this.o.connections} connections (Prefer: wait), listing index on ÷ off (JOB_LISTING)`,
        template: `on ${spreadOf(t('throughput.on.perS'), (n) => perS(n, 'jobs/s'))}`,
        baseline: `off ${spreadOf(t('throughput.off.perS'), (n) => perS(n, 'jobs/s'))}`,
        ratio: t('throughput.ratio'),
        target: `≥ ${THROUGHPUT_TARGET}`,
        met: t('throughput.ratio').median >= THROUGHPUT_TARGET,
      },
      {
        scenario: 'listing',
        measure: this.ctx.redis.own ? 'Redis commands per trivial job (INFO commandstats, scripts\' own included), listing index on vs off' : 'Redis commands per job (only counted on the run\'s own redis-server)',
        template: this.ctx.redis.own ? `on ${spreadOf(t('throughput.on.commands'), num)}` : '—',
        baseline: this.ctx.redis.own ? `off ${spreadOf(t('throughput.off.commands'), num)}` : '—',
        ...(this.ctx.redis.own && { ratio: t('commands.ratio') }),
        target: '—',
        met: undefined,
      },
      { scenario: 'listing', measure: `GET /v1/jobs?limit=50, ${num(this.filled.jobs)} finished jobs, ${this.o.callers} callers: p95`, template: ms(p(this.latencies.all, 95)), baseline: '—', target: `< ${P95_TARGET_MS} ms`, met: p(this.latencies.all, 95) < P95_TARGET_MS },
      { scenario: 'listing', measure: 'GET /v1/jobs?tag=…&limit=50: p95', template: ms(p(this.latencies.tag, 95)), baseline: '—', target: `< ${P95_TARGET_MS} ms`, met: p(this.latencies.tag, 95) < P95_TARGET_MS },
      {
        scenario: 'listing',
        measure: `replay of ${num(r.deadLetters)} dead letters (2 admin clients at once): replayed, new jobs, runs; a second replay`,
        template: `${num(r.replayed)}, ${num(r.distinctJobs)}, ${num(r.ran)}; ${r.again} (${num(r.deadLetters / (r.ms / 1000))}/s)`,
        baseline: '—',
        target: `each once; 0`,
        met: once,
      },
    ];
    const section = [
      `**Listing and dead letters** (own stack; the API asked as random ones of its ${this.keys.length} callers): ${num(this.filled.jobs)} finished jobs written in ${num(this.filled.ms / 1000)} s.`,
      `GET /v1/jobs?limit=50: p50 ${ms(p(this.latencies.all, 50))}, p95 ${ms(p(this.latencies.all, 95))}, p99 ${ms(p(this.latencies.all, 99))} (${this.latencies.all.length} requests);`,
      `?tag=: p50 ${ms(p(this.latencies.tag, 50))}, p95 ${ms(p(this.latencies.tag, 95))}, p99 ${ms(p(this.latencies.tag, 99))}.`,
      `Replay: ${num(r.deadLetters)} dead letters in ${num(r.ms / 1000)} s over ${r.requests} requests.`,
      `Trivial jobs/s with the listing index on ÷ off, before the fill (JOB_LISTING=off: a stack of its own beside this one, the other parked): ${ratio(t('throughput.ratio'))} (on ${spreadOf(t('throughput.on.perS'), (n) => perS(n, 'jobs/s'))}, off ${spreadOf(t('throughput.off.perS'), (n) => perS(n, 'jobs/s'))})${this.ctx.redis.own ? `; Redis commands per job on ${num(t('throughput.on.commands').median)}, off ${num(t('throughput.off.commands').median)}` : ''}.`,
    ].join(' ');
    return { key: this.name, title: 'Listing and dead letters', rows, chart: {}, sections: [section], data: { filled: this.filled, latencies: { all: this.latencies.all, tag: this.latencies.tag }, replay: r, throughput: this.rounds.all() } };
  }

  async close(): Promise<void> {
    this.client?.close();
    this.loadClients?.on.close();
    this.loadClients?.off.close();
    await Promise.all([this.stack?.api.stop(), this.stack?.worker.stop(), this.offStack?.api.stop(), this.offStack?.worker.stop()]);
    if (this.connection) {
      // why one prefix covers both: the off stack's is this one's with `-off` after it.
      await deleteKeys(this.connection, this.prefix);
      this.connection.disconnect();
    }
  }
}
