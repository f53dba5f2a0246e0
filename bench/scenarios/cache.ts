import { blast, BlastResult } from '../load/blast';
import { HttpClient } from '../load/http-client';
import { ms, perS, spreadOf } from '../report/format';
import type { ScenarioReport } from '../report/report.types';
import { Rounds } from '../support/stats';
import { BenchContext, rotate, Scenario } from './context';

const CACHED_INPUT = { n: 25 };

/**
 * 4. Cache hits: a repeated identical submission, answered from the result cache, against the fair
 * ceiling for it: a validated JSON POST route of the same API that answers a constant (POST
 * /bench/echo/fibonacci on the template's API with one bench route added: same body, same zod
 * schema, a constant of the same size). A bodiless GET of the API (GET /health/live) and bare
 * node:http are there for context.
 */
export class CacheScenario implements Scenario<ScenarioReport> {
  readonly name = 'cache';
  private readonly rounds = new Rounds();

  constructor(private readonly ctx: BenchContext) {}

  async beginPass(): Promise<void> {
    const client = new HttpClient(this.ctx.servers.api.url, 1);
    try {
      const first = await client.json<{ status: string }>('POST', '/v1/jobs/fibonacci', { json: CACHED_INPUT, headers: { prefer: 'wait=30' } });
      if (first.body?.status !== 'completed') throw new Error(`cache: priming job did not complete (HTTP ${first.status})`);
      const hit = await client.json<{ cached?: boolean }>('POST', '/v1/jobs/fibonacci', { json: CACHED_INPUT });
      if (hit.body?.cached !== true) throw new Error('cache: a repeated submission was not served from the cache');
    } finally {
      client.close();
    }
    const echo = new HttpClient(this.ctx.servers.echo!.url, 1);
    try {
      const ok = await echo.json('POST', '/bench/echo/fibonacci', { json: CACHED_INPUT });
      const bad = await echo.json('POST', '/bench/echo/fibonacci', { json: { n: -1 } });
      if (ok.status !== 200 || bad.status !== 400) throw new Error(`cache: the echo route answered ${ok.status} and ${bad.status}, not 200 and 400`);
    } finally {
      echo.close();
    }
  }

  async round(round: number, rounds: number): Promise<void> {
    const { opts, progress, servers } = this.ctx;
    const o = opts.cache;
    const legs: Array<{ key: string; label: string; run: (connections: number, durationS: number) => Promise<BlastResult> }> = [
      {
        key: 'hit',
        label: 'cache hit (POST /v1/jobs/fibonacci, same input)',
        run: (connections, durationS) => blast({ url: `${servers.api.url}/v1/jobs/fibonacci`, method: 'POST', body: CACHED_INPUT, connections, durationS }),
      },
      {
        key: 'echo',
        label: 'validated POST answering a constant (POST /bench/echo/fibonacci)',
        run: (connections, durationS) => blast({ url: `${servers.echo!.url}/bench/echo/fibonacci`, method: 'POST', body: CACHED_INPUT, connections, durationS }),
      },
      { key: 'trivial', label: 'bodiless GET (GET /health/live)', run: (connections, durationS) => blast({ url: `${servers.api.url}/health/live`, connections, durationS }) },
    ];
    if (servers.plain) {
      const url = `${servers.plain.url}/health/live`;
      legs.push({ key: 'plain', label: 'bare node:http (GET /health/live)', run: (connections, durationS) => blast({ url, connections, durationS }) });
    }
    for (const leg of rotate(legs, round)) {
      progress.step(this.name, round + 1, rounds, `${leg.label}: ${o.connections} connections, then 1`);
      const loaded = await leg.run(o.connections, o.durationS);
      const alone = await leg.run(1, Math.max(0.3, o.durationS / 2));
      if (loaded.non2xx + loaded.errors > 0) throw new Error(`${leg.label}: ${loaded.non2xx} non-2xx, ${loaded.errors} errors`);
      this.rounds.add(`${leg.key}.rps`, loaded.rps);
      this.rounds.add(`${leg.key}.p99`, loaded.latency.p99);
      this.rounds.add(`${leg.key}.loadedP50`, loaded.latency.p50);
      this.rounds.add(`${leg.key}.aloneP50`, alone.latency.p50);
      progress.log(`  ${leg.label}: ${loaded.rps.toFixed(0)} req/s (p50 ${loaded.latency.p50.toFixed(2)} ms); alone p50 ${alone.latency.p50.toFixed(2)} ms`);
    }
    const last = (name: string) => this.rounds.get(name).values.at(-1)!;
    this.rounds.add('ratio', last('hit.rps') / last('echo.rps'));
    this.rounds.add('getRatio', last('hit.rps') / last('trivial.rps'));
  }

  result(): ScenarioReport {
    const r = (name: string) => this.rounds.get(name);
    const c = this.ctx.opts.cache.connections;
    const rows: ScenarioReport['rows'] = [
      {
        scenario: '4. Cache hits',
        measure: `cache-hit POST req/s ÷ validated JSON POST answering a constant, same API (${c} connections)`,
        template: spreadOf(r('hit.rps'), perS),
        baseline: spreadOf(r('echo.rps'), perS),
        ratio: r('ratio'),
        target: '≥ 0.9',
        met: r('ratio').median >= 0.9,
      },
      {
        scenario: '4. Cache hits',
        measure: `… ÷ a bodiless GET of the same API (GET /health/live), for context`,
        template: '',
        baseline: `${spreadOf(r('trivial.rps'), perS)}${this.ctx.servers.plain ? `; bare node:http ${perS(r('plain.rps').median)}` : ''}`,
        ratio: r('getRatio'),
      },
      {
        scenario: '4. Cache hits',
        measure: `cache-hit p50, one caller (with ${c} connections: ${ms(r('hit.loadedP50').median)})`,
        template: spreadOf(r('hit.aloneP50'), ms),
        baseline: `validated POST ${ms(r('echo.aloneP50').median)}; bodiless GET ${ms(r('trivial.aloneP50').median)}`,
        target: '≤ 2 ms',
        met: r('hit.aloneP50').median <= 2,
      },
    ];
    return {
      key: 'cache',
      title: 'Cache hits',
      rows,
      chart: {
        throughput: {
          title: '4. Cache hit vs validated POST: req/s',
          unit: 'req/s',
          bars: [
            { label: 'cache hit', value: r('hit.rps').median, template: true },
            { label: 'validated POST', value: r('echo.rps').median, template: false },
            { label: 'bodiless GET', value: r('trivial.rps').median, template: false },
            ...(this.ctx.servers.plain ? [{ label: 'node:http', value: r('plain.rps').median, template: false }] : []),
          ],
        },
        latency: {
          title: `4. Cache hit vs validated POST: p99, ${c} conns`,
          unit: 'ms',
          bars: [
            { label: 'cache hit', value: r('hit.p99').median, template: true },
            { label: 'validated POST', value: r('echo.p99').median, template: false },
          ],
        },
      },
      sections: [],
      data: this.rounds.all(),
    };
  }
}
