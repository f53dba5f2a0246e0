import { HttpClient } from '../load/http-client';
import { ms, num, ratio, spreadOf } from '../report/format';
import type { ScenarioReport } from '../report/report.types';
import { Rounds, summarize } from '../support/stats';
import { BenchContext, fresh, Scenario, sleep } from './context';

const RUNS = 'nest_offload_job_run_seconds_count';

/**
 * 5. Single-flight: many concurrent submissions of one fresh input run it once; every caller gets
 * the result about as soon as a lone caller would.
 */
export class SingleFlightScenario implements Scenario<ScenarioReport> {
  readonly name = 'singleFlight';
  private readonly rounds = new Rounds();

  constructor(private readonly ctx: BenchContext) {}

  async round(round: number, rounds: number): Promise<void> {
    const { opts, progress, servers } = this.ctx;
    const { callers, jobMs } = opts.singleFlight;
    const iterations = this.ctx.iterationsFor(jobMs);
    const client = new HttpClient(servers.api.url, callers);
    try {
      const submit = async (salt: string) => {
        const t0 = performance.now();
        const reply = await client.json<{ status: string; result?: { hash: string } }>('POST', '/v1/jobs/bench-pbkdf2', {
          json: { salt, iterations },
          headers: { prefer: 'wait=60' },
        });
        if (reply.body?.status !== 'completed') throw new Error(`single-flight: HTTP ${reply.status}, status ${reply.body?.status}`);
        return { ms: performance.now() - t0, hash: reply.body.result!.hash };
      };
      const executions = async (run: () => Promise<unknown>) => {
        const before = await servers.worker.metric(RUNS, { type: 'bench-pbkdf2' });
        await run();
        await sleep(100);
        return (await servers.worker.metric(RUNS, { type: 'bench-pbkdf2' })) - before;
      };

      progress.step(this.name, round + 1, rounds, `one caller, a fresh ~${jobMs} ms pbkdf2`);
      let alone = NaN;
      const aloneRuns = await executions(async () => (alone = (await submit(fresh())).ms));

      progress.step(this.name, round + 1, rounds, `${callers} concurrent callers, one fresh input`);
      const salt = fresh();
      let crowd: Array<{ ms: number; hash: string }> = [];
      // why: a warm keep-alive pool, so the callers' latency is the job's, not TCP connection setup.
      await Promise.all(Array.from({ length: callers }, () => client.send('GET', '/health/live')));
      const crowdRuns = await executions(async () => (crowd = await Promise.all(Array.from({ length: callers }, () => submit(salt)))));
      if (new Set(crowd.map((c) => c.hash)).size !== 1) throw new Error('single-flight: callers got different results');
      const p99 = summarize(crowd.map((c) => c.ms)).p99;
      this.rounds.add('aloneMs', alone);
      this.rounds.add('aloneExecutions', aloneRuns);
      this.rounds.add('executions', crowdRuns);
      this.rounds.add('crowdP50', summarize(crowd.map((c) => c.ms)).p50);
      this.rounds.add('crowdP99', p99);
      this.rounds.add('p99Ratio', p99 / alone);
      progress.log(`  alone ${alone.toFixed(1)} ms; ${callers} callers p99 ${p99.toFixed(1)} ms; executions ${crowdRuns}`);
    } finally {
      client.close();
    }
  }

  result(): ScenarioReport {
    const r = (name: string) => this.rounds.get(name);
    const callers = this.ctx.opts.singleFlight.callers;
    const executions = r('executions');
    return {
      key: 'singleFlight',
      title: 'Single-flight',
      rows: [
        {
          scenario: '5. Single-flight',
          measure: `executions for ${callers} concurrent identical submissions of a fresh input (every round)`,
          template: executions.values.join(', '),
          baseline: '',
          target: 'exactly 1',
          met: executions.values.length > 0 && executions.values.every((v) => v === 1),
        },
        {
          scenario: '5. Single-flight',
          measure: `callers' p99 ÷ one caller alone (~${this.ctx.opts.singleFlight.jobMs} ms job)`,
          template: `${spreadOf(r('crowdP99'), ms)} p99 (p50 ${ms(r('crowdP50').median)})`,
          baseline: `alone ${spreadOf(r('aloneMs'), ms)}`,
          ratio: r('p99Ratio'),
        },
      ],
      chart: {
        latency: {
          title: `5. Single-flight: ${callers} callers p99 vs alone`,
          unit: 'ms',
          bars: [
            { label: `${callers} callers p99`, value: r('crowdP99').median, template: true },
            { label: 'one caller', value: r('aloneMs').median, template: false },
          ],
        },
      },
      sections: [`Single-flight: executions per round ${executions.values.join(', ')}; p99 ratio ${ratio(r('p99Ratio'))}; ${num(r('aloneExecutions').median)} execution for the lone caller.`],
      data: this.rounds.all(),
    };
  }
}
