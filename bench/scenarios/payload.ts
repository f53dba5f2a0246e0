import { HttpClient } from '../load/http-client';
import { ms, num } from '../report/format';
import type { ScenarioReport } from '../report/report.types';
import { readMetric } from '../support/stack';
import { summarize } from '../support/stats';
import { BenchContext, Scenario } from './context';

interface Sample {
  size: number;
  bytes: number;
  total: number;
  toCreated: number;
  toPickup: number;
  inWorker: number;
  toClient: number;
  loopMax: number;
}

const LOOP_MAX = 'nest_offload_nodejs_eventloop_lag_max_seconds';

/**
 * Extra (BENCH_SCENARIOS=payload): large payloads. bench-sort jobs of growing size, one at a time; where
 * the time goes and how long the API's event loop stalls on JSON, validation and hashing.
 */
export class PayloadScenario implements Scenario<ScenarioReport> {
  readonly name = 'payload';
  private readonly samples: Sample[] = [];

  constructor(private readonly ctx: BenchContext) {}

  async round(round: number, rounds: number): Promise<void> {
    const { api } = this.ctx.servers;
    const client = new HttpClient(api.url, 1);
    try {
      for (const size of this.ctx.opts.payload.sizes) {
        this.ctx.progress.step(this.name, round + 1, rounds, `bench-sort of ${size.toLocaleString('en-US')} numbers`);
        for (let i = 0; i < 3; i++) {
          const numbers = Array.from({ length: size }, () => Math.round(Math.random() * 1e9) / 1000);
          const bytes = JSON.stringify({ numbers }).length;
          await readMetric(api.url, LOOP_MAX);
          const sent = Date.now();
          const t0 = performance.now();
          const reply = await client.json<{ status: string; createdAt: string; startedAt: string; finishedAt: string }>('POST', '/v1/jobs/bench-sort', {
            json: { numbers },
            headers: { prefer: 'wait=60' },
          });
          const total = performance.now() - t0;
          const received = Date.now();
          const loopMax = (await readMetric(api.url, LOOP_MAX)) * 1000;
          const v = reply.body;
          if (v?.status !== 'completed') throw new Error(`bench-sort of ${size}: HTTP ${reply.status}, status ${v?.status}`);
          const [c, s, f] = [Date.parse(v.createdAt), Date.parse(v.startedAt), Date.parse(v.finishedAt)];
          this.samples.push({ size, bytes, total, toCreated: c - sent, toPickup: s - c, inWorker: f - s, toClient: received - f, loopMax });
        }
      }
    } finally {
      client.close();
    }
  }

  result(): ScenarioReport {
    const sizes = [...new Set(this.samples.map((s) => s.size))];
    const lines = [
      '**Large payloads** (`bench-sort`, one caller, median of the samples; ms):',
      '',
      '| Numbers | Body | Total | → created (API: parse, validate, hash) | → picked up (add) | in worker | → client (reload, serialize) | API loop max |',
      '|---|---|---|---|---|---|---|---|',
      ...sizes.map((size) => {
        const of = this.samples.filter((s) => s.size === size);
        const p50 = (key: keyof Sample) => num(summarize(of.map((s) => s[key])).p50);
        return `| ${size.toLocaleString('en-US')} | ${num(of[0].bytes / 1024)} KB | ${p50('total')} | ${p50('toCreated')} | ${p50('toPickup')} | ${p50('inWorker')} | ${p50('toClient')} | ${p50('loopMax')} |`;
      }),
    ];
    const biggest = this.samples.filter((s) => s.size === sizes.at(-1));
    return {
      key: 'payload',
      title: 'Large payloads',
      rows: [
        {
          scenario: 'Extra: payload',
          measure: `bench-sort of ${sizes.at(-1)?.toLocaleString('en-US')} numbers: latency, and the API's loop max meanwhile`,
          template: `${ms(summarize(biggest.map((s) => s.total)).p50)}, loop max ${ms(summarize(biggest.map((s) => s.loopMax)).p50)}`,
          baseline: '',
        },
      ],
      chart: {},
      sections: [lines.join('\n')],
      data: this.samples,
    };
  }
}
