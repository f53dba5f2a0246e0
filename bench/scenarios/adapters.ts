import { sampleItem } from '../adapters/items';
import { blast } from '../load/blast';
import { ms, perS, ratio } from '../report/format';
import type { ScenarioReport } from '../report/report.types';
import { Rounds } from '../support/stats';
import { BenchContext, rotate, Scenario } from './context';

type Server = { key: 'fastify' | 'express' | 'plain'; label: string; url: string };

/**
 * HTTP adapter choice: the same small Nest controller (JSON GET, JSON POST validated with zod) on
 * Fastify and on Express, with bare node:http for context.
 */
export class AdaptersScenario implements Scenario<ScenarioReport> {
  readonly name = 'adapters';
  private readonly rounds = new Rounds();
  private readonly servers: Server[];

  constructor(private readonly ctx: BenchContext) {
    const { fastify, express, plain } = ctx.servers;
    this.servers = [
      { key: 'fastify', label: 'Nest + Fastify', url: fastify!.url },
      { key: 'express', label: 'Nest + Express', url: express!.url },
      { key: 'plain', label: 'node:http', url: plain!.url },
    ];
  }

  async round(round: number, rounds: number): Promise<void> {
    const { connections, durationS } = this.ctx.opts.adapters;
    for (const server of rotate(this.servers, round)) {
      this.ctx.progress.step(this.name, round + 1, rounds, `${server.label}: GET then POST, ${connections} connections, ${durationS} s each`);
      const get = await blast({ url: `${server.url}/items/42`, connections, durationS });
      const post = await blast({ url: `${server.url}/items`, method: 'POST', body: sampleItem, connections, durationS });
      for (const [route, res] of [['get', get], ['post', post]] as const) {
        if (res.non2xx + res.errors > 0) throw new Error(`${server.label} ${route}: ${res.non2xx} non-2xx, ${res.errors} errors`);
        this.rounds.add(`${server.key}.${route}.rps`, res.rps);
        this.rounds.add(`${server.key}.${route}.p99`, res.latency.p99);
      }
      this.ctx.progress.log(`  ${server.label}: GET ${get.rps.toFixed(0)} req/s, POST ${post.rps.toFixed(0)} req/s`);
    }
    const last = (name: string) => this.rounds.get(name).values.at(-1)!;
    this.rounds.add('get.ratio', last('fastify.get.rps') / last('express.get.rps'));
    this.rounds.add('post.ratio', last('fastify.post.rps') / last('express.post.rps'));
  }

  result(): ScenarioReport {
    const r = (name: string) => this.rounds.get(name);
    const cell = (key: string, route: string) => `${perS(r(`${key}.${route}.rps`).median)}, p99 ${ms(r(`${key}.${route}.p99`).median)}`;
    const rows: ScenarioReport['rows'] = (['get', 'post'] as const).map((route) => ({
      scenario: 'HTTP adapter',
      measure: `${route === 'get' ? 'JSON GET' : 'JSON POST + zod validation'}: Nest on Fastify ÷ Nest on Express (node:http ${perS(r(`plain.${route}.rps`).median)})`,
      template: `Fastify ${cell('fastify', route)}`,
      baseline: `Express ${cell('express', route)}`,
      ratio: r(`${route}.ratio`),
    }));
    return {
      key: 'adapters',
      title: 'HTTP adapter',
      rows,
      chart: {
        throughput: {
          title: 'Adapter: JSON POST + validation, req/s',
          unit: 'req/s',
          bars: [
            { label: 'Nest+Fastify', value: r('fastify.post.rps').median, template: true },
            { label: 'Nest+Express', value: r('express.post.rps').median, template: false },
            { label: 'node:http', value: r('plain.post.rps').median, template: false },
          ],
        },
        latency: {
          title: 'Adapter: JSON POST + validation, p99',
          unit: 'ms',
          bars: [
            { label: 'Nest+Fastify', value: r('fastify.post.p99').median, template: true },
            { label: 'Nest+Express', value: r('express.post.p99').median, template: false },
            { label: 'node:http', value: r('plain.post.p99').median, template: false },
          ],
        },
      },
      sections: [`Adapter ratios (Fastify ÷ Express): GET ${ratio(r('get.ratio'))}, POST ${ratio(r('post.ratio'))}; ${this.ctx.opts.adapters.connections} connections.`],
      data: this.rounds.all(),
    };
  }
}
