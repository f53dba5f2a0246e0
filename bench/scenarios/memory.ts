import { closedLoop, HttpClient } from '../load/http-client';
import { mb, num } from '../report/format';
import type { ScenarioReport } from '../report/report.types';
import type { Progress } from '../support/progress';
import { rssBytes } from '../support/stack';
import { nextTrivial, type Servers, sleep } from './context';

interface Checkpoint {
  label: string;
  pass: number;
  api: number;
  worker: number;
  apiHeap: number;
  workerHeap: number;
}

/** Growth between passes above both of these is reported as unbounded. */
const GROWTH_SHARE = 0.15;
const GROWTH_BYTES = 24 * 1024 * 1024;
/**
 * Soak: the heap left after a full collection may rise by at most this much per 10,000 jobs
 * (least-squares slope) to count as flat: a leak of 100 bytes a job would exceed it.
 */
const SOAK_SLOPE_MB = 1;
const HEAP = 'nest_offload_nodejs_heap_size_used_bytes';

interface SoakPoint {
  jobs: number;
  /** RSS, as the chunk left it. */
  api: number;
  worker: number;
  /** V8 heap used (main thread) right after a full collection. */
  apiHeap: number;
  workerHeap: number;
}

/** Least-squares slope of y over x. */
function slope(points: Array<[number, number]>): number {
  const n = points.length;
  const mx = points.reduce((s, [x]) => s + x, 0) / n;
  const my = points.reduce((s, [, y]) => s + y, 0) / n;
  const covariance = points.reduce((s, [x, y]) => s + (x - mx) * (y - my), 0);
  const den = points.reduce((s, [x]) => s + (x - mx) ** 2, 0);
  return den === 0 ? NaN : covariance / den;
}

/**
 * 6. Memory: RSS (and V8 heap) of the API and the worker idle and after every scenario, in each of
 * the passes; the second pass must not end higher than the first by more than noise.
 */
export class MemoryRecorder {
  readonly checkpoints: Checkpoint[] = [];
  readonly soakPoints: SoakPoint[] = [];

  constructor(private readonly servers: Servers) {}

  /**
   * The same trivial job, `chunks` × `perChunk` times; after each chunk, RSS and the heap left by a
   * full collection: a process that keeps something per job grows linearly in both, one that only
   * collects lazily grows in RSS alone (its heap after a collection stays flat).
   */
  async soak(progress: Progress, chunks: number, perChunk: number): Promise<void> {
    const client = new HttpClient(this.servers.api.url, 32);
    try {
      let jobs = 0;
      for (let c = 0; c <= chunks; c++) {
        if (c > 0) {
          progress.log(`memory soak · chunk ${c}/${chunks} · ${perChunk} trivial jobs, 32 callers`);
          const run = await closedLoop({
            concurrency: 32,
            total: perChunk,
            task: () => client.json('POST', '/v1/jobs/bench-sum', { json: nextTrivial(), headers: { prefer: 'wait=30' } }),
          });
          if (run.errors.length > 0) throw new Error(`memory soak: ${run.errors[0]}`);
          jobs += perChunk;
        }
        await sleep(300);
        const [api, worker] = [rssBytes(this.servers.api.pid), rssBytes(this.servers.worker.pid)];
        const [apiHeap, workerHeap] = await this.heapAfterGc();
        this.soakPoints.push({ jobs, api, worker, apiHeap, workerHeap });
      }
    } finally {
      client.close();
    }
  }

  /**
   * The API's and the worker's heap used right after a full collection (SIGUSR2: see
   * bench-jobs.preload.ts, which every app the bench starts has).
   */
  private async heapAfterGc(): Promise<[number, number]> {
    const { api, worker } = this.servers;
    for (const app of [api, worker]) process.kill(app.pid, 'SIGUSR2');
    await sleep(200);
    return Promise.all([api.metric(HEAP), worker.metric(HEAP)]);
  }

  /**
   * Growth in MB per 10,000 soak jobs, after the first chunk. why skip it: the first thousands of
   * jobs refill heaps and allocator arenas trimmed while the process idled between scenarios (the
   * worker's RSS steps up once, then stays flat); a leak keeps climbing after that.
   */
  private soakSlope(key: 'api' | 'worker' | 'apiHeap' | 'workerHeap'): number {
    return slope(this.soakPoints.slice(1).map((p) => [p.jobs / 10_000, p[key] / 2 ** 20]));
  }

  async record(label: string, pass: number): Promise<void> {
    // why: a short pause lets in-flight responses and their buffers go before reading.
    await sleep(300);
    const { api, worker } = this.servers;
    const [apiHeap, workerHeap] = await Promise.all([api.metric(HEAP), worker.metric(HEAP)]);
    this.checkpoints.push({ label, pass, api: rssBytes(api.pid), worker: rssBytes(worker.pid), apiHeap, workerHeap });
  }

  result(): ScenarioReport {
    const passes = Math.max(...this.checkpoints.map((c) => c.pass));
    const lastOf = (pass: number) => [...this.checkpoints].reverse().find((c) => c.pass === pass);
    const idle = this.checkpoints[0];
    const first = lastOf(1);
    const final = lastOf(passes);
    const growth = (key: 'api' | 'worker') => (first && final ? final[key] - first[key] : NaN);
    const bounded = (key: 'api' | 'worker') => passes < 2 || growth(key) <= Math.max(GROWTH_BYTES, first![key] * GROWTH_SHARE);
    const cell = (key: 'api' | 'worker') =>
      `${mb(idle?.[key] ?? NaN)} idle → ${mb(first?.[key] ?? NaN)} after pass 1${passes > 1 ? ` → ${mb(final?.[key] ?? NaN)} after pass ${passes} (${growth(key) >= 0 ? '+' : ''}${mb(growth(key))})` : ''}`;
    const table = [
      '**Memory checkpoints** (RSS / V8 heap used, MB):',
      '',
      '| Checkpoint | Pass | API RSS | API heap | Worker RSS (incl. pool threads) | Worker heap (main thread) |',
      '|---|---|---|---|---|---|',
      ...this.checkpoints.map(
        (c) => `| ${c.label} | ${c.pass} | ${num(c.api / 2 ** 20)} | ${num(c.apiHeap / 2 ** 20)} | ${num(c.worker / 2 ** 20)} | ${num(c.workerHeap / 2 ** 20)} |`,
      ),
    ].join('\n');
    const soakJobs = this.soakPoints.at(-1)?.jobs ?? 0;
    const soakTable = [
      `**Memory soak** (${soakJobs.toLocaleString('en-US')} trivial jobs at 32 callers after the passes; RSS, and the heap used right after a full collection, in MB after each chunk):`,
      '',
      `| Jobs | ${this.soakPoints.map((p) => p.jobs.toLocaleString('en-US')).join(' | ')} |`,
      `|---|${this.soakPoints.map(() => '---|').join('')}`,
      `| API RSS | ${this.soakPoints.map((p) => num(p.api / 2 ** 20)).join(' | ')} |`,
      `| worker RSS | ${this.soakPoints.map((p) => num(p.worker / 2 ** 20)).join(' | ')} |`,
      `| API heap after GC | ${this.soakPoints.map((p) => num(p.apiHeap / 2 ** 20)).join(' | ')} |`,
      `| worker heap after GC | ${this.soakPoints.map((p) => num(p.workerHeap / 2 ** 20)).join(' | ')} |`,
    ].join('\n');
    const rows: ScenarioReport['rows'] = (['api', 'worker'] as const).map((key) => ({
      scenario: '6. Memory',
      measure: `${key === 'api' ? 'API' : 'worker'} RSS, pass ${passes} vs pass 1 (bounded: growth ≤ ${GROWTH_SHARE * 100}% or ${mb(GROWTH_BYTES)})`,
      template: cell(key),
      baseline: '',
      target: passes < 2 ? 'needs 2 passes' : 'bounded',
      met: passes < 2 ? undefined : bounded(key),
    }));
    if (this.soakPoints.length > 2) {
      const perTenK = (key: 'api' | 'worker' | 'apiHeap' | 'workerHeap') => {
        const mbs = this.soakSlope(key);
        return `${mbs >= 0 ? '+' : ''}${num(mbs)} MB per 10k jobs`;
      };
      for (const key of ['api', 'worker'] as const) {
        const heap = key === 'api' ? 'apiHeap' : 'workerHeap';
        const name = key === 'api' ? 'API' : 'worker';
        rows.push({
          scenario: '6. Memory',
          measure: `${name} heap left by a full collection, trend over the soak after its first chunk (least squares, MB per 10,000 jobs; RSS for context)`,
          template: `${perTenK(heap)} (RSS ${perTenK(key)})`,
          baseline: '',
          target: `≤ ${SOAK_SLOPE_MB} MB per 10k`,
          met: this.soakSlope(heap) <= SOAK_SLOPE_MB,
        });
      }
    }
    return {
      key: 'memory',
      title: 'Memory',
      rows,
      chart: {},
      sections: [table, ...(this.soakPoints.length > 0 ? [soakTable] : [])],
      data: { checkpoints: this.checkpoints, soak: this.soakPoints },
    };
  }
}
