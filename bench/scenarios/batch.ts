import { closedLoop, HttpClient } from '../load/http-client';
import { num, perS, spreadOf } from '../report/format';
import type { ScenarioReport } from '../report/report.types';
import { readMetric, redisCommandCount } from '../support/stack';
import { Rounds } from '../support/stats';
import { benchJobs } from '../support/bench-jobs';
import { BenchContext, nextTrivial, rotate, Scenario, sleep } from './context';

interface View {
  status: string;
}
interface BatchReply {
  items: Array<{ status: number; job?: View }>;
}

type Side = 'batch' | 'single';

/**
 * 7. Batch: trivial bench-sum jobs with distinct inputs submitted as 1,000-item batches
 * (POST /v1/jobs/bench-sum/batch) against one POST per job, both end to end (Prefer: wait, until every
 * job is done) and for submission alone (no wait: what the API and Redis take to accept them).
 */
export class BatchScenario implements Scenario<ScenarioReport> {
  readonly name = 'batch';
  private readonly rounds = new Rounds();
  private client?: HttpClient;

  constructor(private readonly ctx: BenchContext) {}

  async beginPass(): Promise<void> {
    this.client ??= new HttpClient(this.ctx.servers.api.url, Math.max(this.ctx.opts.batch.singleCallers, this.ctx.opts.batch.callers));
    this.ctx.progress.log(`${this.name}: warming up`);
    await this.endToEnd('batch', this.ctx.opts.batch.size);
    await this.endToEnd('single', 50);
  }

  async round(round: number, rounds: number): Promise<void> {
    const { opts, progress } = this.ctx;
    const o = opts.batch;
    for (const side of rotate(['batch', 'single'] as const, round)) {
      const how = side === 'batch' ? `${o.size}-item batches from ${o.callers} callers` : `one POST per job from ${o.singleCallers} callers`;
      progress.step(this.name, round + 1, rounds, `${o.jobs} jobs end to end (Prefer: wait), ${how}`);
      const before = this.ctx.redis.own ? await redisCommandCount(this.ctx.redisClient) : NaN;
      const jobsPerS = await this.endToEnd(side, o.jobs);
      const after = this.ctx.redis.own ? await redisCommandCount(this.ctx.redisClient) : NaN;
      this.rounds.add(`${side}.jobsPerS`, jobsPerS);
      // why minus 2: the two INFO calls that counted.
      this.rounds.add(`${side}.redisCommandsPerJob`, (after - before - 2) / o.jobs);

      progress.step(this.name, round + 1, rounds, `${o.jobs} submissions without waiting, ${how}`);
      const acceptedPerS = await this.acceptOnly(side, o.jobs);
      this.rounds.add(`${side}.acceptedPerS`, acceptedPerS);
      progress.log(`  ${side}: ${jobsPerS.toFixed(0)} jobs/s end to end; ${acceptedPerS.toFixed(0)} submissions/s accepted`);
      await this.drained();
    }
    const last = (name: string) => this.rounds.get(name).values.at(-1)!;
    this.rounds.add('jobsRatio', last('batch.jobsPerS') / last('single.jobsPerS'));
    this.rounds.add('acceptRatio', last('batch.acceptedPerS') / last('single.acceptedPerS'));
  }

  /** `jobs` fresh jobs submitted and waited for: jobs/s from the first request to the last answer. */
  private async endToEnd(side: Side, jobs: number): Promise<number> {
    const { size, callers, singleCallers } = this.ctx.opts.batch;
    const t0 = performance.now();
    if (side === 'batch') {
      const run = await closedLoop({ concurrency: callers, total: Math.ceil(jobs / size), task: () => this.postBatch(size, 60) });
      if (run.errors.length > 0) throw new Error(`batch: ${run.errors[0]}`);
    } else {
      const run = await closedLoop({ concurrency: singleCallers, total: jobs, task: () => this.postOne(60) });
      if (run.errors.length > 0) throw new Error(`single: ${run.errors[0]}`);
    }
    return jobs / ((performance.now() - t0) / 1000);
  }

  /** `jobs` fresh jobs submitted without waiting: submissions accepted per second. */
  private async acceptOnly(side: Side, jobs: number): Promise<number> {
    const { size, singleCallers } = this.ctx.opts.batch;
    const t0 = performance.now();
    const run =
      side === 'batch'
        ? await closedLoop({ concurrency: 1, total: Math.ceil(jobs / size), task: () => this.postBatch(size, 0) })
        : await closedLoop({ concurrency: singleCallers, total: jobs, task: () => this.postOne(0) });
    if (run.errors.length > 0) throw new Error(`${side}, no wait: ${run.errors[0]}`);
    return jobs / ((performance.now() - t0) / 1000);
  }

  private async postBatch(size: number, waitSeconds: number): Promise<void> {
    const items = Array.from({ length: size }, () => nextTrivial());
    const headers = waitSeconds > 0 ? { prefer: `wait=${waitSeconds}` } : undefined;
    const reply = await this.client!.json<BatchReply>('POST', '/v1/jobs/bench-sum/batch', { json: { items }, headers, timeoutMs: 120_000 });
    const expected = waitSeconds > 0 ? 'completed' : undefined;
    const bad = reply.body?.items?.find((item) => !item.job || (expected && item.job.status !== expected));
    if (reply.body?.items?.length !== size || bad) throw new Error(`batch: HTTP ${reply.status}, an item ${JSON.stringify(bad ?? reply.body).slice(0, 200)}`);
  }

  private async postOne(waitSeconds: number): Promise<void> {
    const headers = waitSeconds > 0 ? { prefer: `wait=${waitSeconds}` } : undefined;
    const reply = await this.client!.json<View>('POST', '/v1/jobs/bench-sum', { json: nextTrivial(), headers });
    if (reply.status >= 300 || (waitSeconds > 0 && reply.body?.status !== 'completed')) throw new Error(`single: HTTP ${reply.status}, status ${reply.body?.status}`);
  }

  /** Waits until the worker has run everything submitted without waiting, so the next leg starts level. */
  private async drained(): Promise<void> {
    const deadline = Date.now() + 120_000;
    await sleep(1100); // the API reads queue depths at most once a second: skip a reading from before

    // why the metric: queue_backlog (waiting + prioritized + active) is what the API itself reports.
    while ((await readMetric(this.ctx.servers.api.url, 'nest_offload_queue_backlog', { queue: benchJobs.sum.queue })) > 0) {
      if (Date.now() > deadline) throw new Error('batch: the queue did not drain within 2 minutes');
      await sleep(200);
    }
  }

  result(): ScenarioReport {
    const r = (name: string) => this.rounds.get(name);
    const { size, callers, singleCallers, jobs } = this.ctx.opts.batch;
    const jobsPerS = (v: number) => perS(v, 'jobs/s');
    const rows: ScenarioReport['rows'] = [
      {
        scenario: '7. Batch',
        measure: `trivial jobs/s end to end (Prefer: wait): ${size}-item batches (${callers} callers) ÷ one POST per job (${singleCallers} callers)`,
        template: spreadOf(r('batch.jobsPerS'), jobsPerS),
        baseline: spreadOf(r('single.jobsPerS'), jobsPerS),
        ratio: r('jobsRatio'),
      },
      {
        scenario: '7. Batch',
        measure: `submissions accepted/s, no wait: ${size}-item batches (1 caller) ÷ one POST per job (${singleCallers} callers)`,
        template: spreadOf(r('batch.acceptedPerS'), (v) => perS(v, 'jobs/s')),
        baseline: spreadOf(r('single.acceptedPerS'), (v) => perS(v, 'jobs/s')),
        ratio: r('acceptRatio'),
      },
    ];
    const commands = this.ctx.redis.own
      ? `Redis commands executed per job end to end, including those inside BullMQ's Lua scripts: batches ${num(r('batch.redisCommandsPerJob').median)}, single POSTs ${num(r('single.redisCommandsPerJob').median)}.`
      : 'Redis commands per job: not measured (shared Redis).';
    return {
      key: 'batch',
      title: 'Batch',
      rows,
      chart: {
        throughput: {
          title: `7. Batch: jobs/s end to end, ${jobs} jobs`,
          unit: 'jobs/s',
          bars: [
            { label: `${size}-item batches`, value: r('batch.jobsPerS').median, template: true },
            { label: 'one POST per job', value: r('single.jobsPerS').median, template: false },
          ],
        },
      },
      sections: [`Batch: ${jobs} trivial \`bench-sum\` jobs per leg. ${commands}`],
      data: this.rounds.all(),
    };
  }

  async close(): Promise<void> {
    this.client?.close();
  }
}
