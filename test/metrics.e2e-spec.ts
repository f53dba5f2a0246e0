import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { METRICS } from '@app/metrics';
import { AppProcess, stackEnv, startApp } from './support/apps';
import { present } from './support/capabilities';
import { request, submit } from './support/http';
import { hasFamily, type Sample, scrape, series, total } from './support/prometheus';
import { metricNamesIn } from './support/promql';
import { waitFor } from './support/wait';

const ROOT = join(__dirname, '..');
const readRepo = (path: string) => readFileSync(join(ROOT, path), 'utf8');

/** Which app exports each family (both: the HTTP histogram, Redis connections, Node's defaults). */
/** Exported by the API only with API_KEYS (fair share's per-key gauge): test/tenancy.e2e-spec.ts reads it. */
const WITH_API_KEYS = [METRICS.callerJobs];
/** Exported by the API only with the dead-letters capability (apps/api/src/dead-letters). */
const WITH_DEAD_LETTERS = [METRICS.deadLettersReplayed];
const EXPORTED_BY: Record<'api' | 'worker', string[]> = {
  api: [METRICS.httpRequestDuration, METRICS.redisConnected, METRICS.eventLoopLagP99, METRICS.jobsSubmitted, METRICS.cacheLookups, METRICS.queueJobs, METRICS.queueBacklog, METRICS.jobsExpired, METRICS.jobsWatched, ...(present('dead-letters') ? WITH_DEAD_LETTERS : [])],
  worker: [
    METRICS.httpRequestDuration,
    METRICS.redisConnected,
    METRICS.eventLoopLagP99,
    METRICS.jobsFinished,
    METRICS.jobsExpired,
    METRICS.jobRun,
    METRICS.jobWait,
    METRICS.jobEndToEnd,
    METRICS.jobsActive,
    METRICS.poolThreads,
    METRICS.poolUtilization,
    METRICS.poolThreadReplacements,
    METRICS.jobLogLinesDropped,
  ],
};

/** Every PromQL expression of the dashboard (panels and variables) and of the alert rules. */
function monitoringExpressions(): Array<{ where: string; expr: string }> {
  type Panel = { title: string; targets?: Array<{ expr: string }> };
  const dashboard = JSON.parse(readRepo('docker/grafana/dashboard.json')) as {
    panels: Panel[];
    templating: { list: Array<{ name: string; query?: string | { query: string } }> };
  };
  const rules = parse(readRepo('docker/grafana/alerts.yaml')) as { groups: Array<{ rules: Array<{ alert: string; expr: string }> }> };
  return [
    ...dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => ({ where: `panel "${p.title}"`, expr: t.expr }))),
    ...dashboard.templating.list
      .filter((v) => v.query !== undefined && !(typeof v.query === 'string' && v.name === 'datasource'))
      .map((v) => ({ where: `variable $${v.name}`, expr: typeof v.query === 'string' ? v.query : v.query!.query })),
    ...rules.groups.flatMap((g) => g.rules.map((r) => ({ where: `alert ${r.alert}`, expr: r.expr }))),
  ];
}

/**
 * Both /metrics after real jobs (cache hits, joins, rejections, a timeout, a crash, an out-of-memory
 * thread, a cancel): every family the code names is there with values that make sense, and the
 * Grafana dashboard and alert rules name only metrics the apps export.
 */
describe('metrics', () => {
  const apps: AppProcess[] = [];
  let api: AppProcess;
  let worker: AppProcess;
  let apiSamples: Sample[];
  let workerSamples: Sample[];

  beforeAll(async () => {
    // why 4 s, not less: the timeout also bounds the crash and the out-of-memory jobs below, which
    // must fail as such before it; 1.5 s once classified the crash as a timeout on a fresh-clone CI
    // run whose two lanes loaded both cores (the suite took 7 s; it passes at 1.5 s when run alone).
    const env = stackEnv('metrics', { JOB_TIMEOUT_MS: '4000', WORKER_MAX_MEMORY_MB: '32' });
    apps.push((api = await startApp('api', env)));
    apps.push((worker = await startApp('worker', env)));

    const first = await submit(api.url, 'fibonacci', { n: 20 }, { wait: 15 });
    expect(first.body).toMatchObject({ status: 'completed' });
    expect(first.body.cached).toBeUndefined();
    expect((await submit(api.url, 'fibonacci', { n: 20 }, { wait: 15 })).body).toMatchObject({ status: 'completed', cached: true });
    expect((await submit(api.url, 'fibonacci', { n: -1 })).status).toBe(400);
    expect((await submit(api.url, 'no-such-type', {})).status).toBe(404);
    expect((await request(`${api.url}/nowhere`)).status).toBe(404);
    // Two identical submissions at once: one queues the job, the other joins it.
    const pair = await Promise.all([1, 2].map(() => submit(api.url, 'chaos', { mode: 'spin', ms: 300, tag: 'pair' }, { wait: 15 })));
    expect(pair[0].body.id).toBe(pair[1].body.id);
    // Each of these ends with its thread terminated and replaced.
    expect((await submit(api.url, 'chaos', { mode: 'hang' }, { wait: 20 })).body).toMatchObject({ error: { code: 'JOB_TIMEOUT' } });
    expect((await submit(api.url, 'chaos', { mode: 'exit' }, { wait: 20 })).body).toMatchObject({ error: { code: 'JOB_CRASHED' } });
    expect((await submit(api.url, 'chaos', { mode: 'leak' }, { wait: 20 })).body).toMatchObject({ error: { code: 'JOB_OUT_OF_MEMORY' } });
    const spin = await submit(api.url, 'chaos', { mode: 'sleep', ms: 20_000, tag: 'cancel' });
    await waitFor(async () => (await request(`${api.url}/v1/jobs/${spin.body.id}`)).body.status === 'active', { what: 'the spin job to run' });
    expect((await request(`${api.url}/v1/jobs/${spin.body.id}`, { method: 'DELETE' })).body).toMatchObject({ status: 'cancelled' });

    // The worker counts the cancel when its thread is gone; scrape once it has.
    await waitFor(async () => total(await scrape(worker.url), METRICS.poolThreadReplacements, { reason: 'cancelled' }) === 1, { what: 'the cancel to be counted' });
    [apiSamples, workerSamples] = await Promise.all([scrape(api.url), scrape(worker.url)]);
  }, 120_000);
  afterAll(() => Promise.all(apps.map((app) => app.stop())));

  it('exports every family the code names, each from the app that owns it', () => {
    expect(new Set([...EXPORTED_BY.api, ...EXPORTED_BY.worker, ...WITH_API_KEYS, ...WITH_DEAD_LETTERS])).toEqual(new Set(Object.values(METRICS)));
    expect(EXPORTED_BY.api.filter((name) => !hasFamily(apiSamples, name))).toEqual([]);
    expect(EXPORTED_BY.worker.filter((name) => !hasFamily(workerSamples, name))).toEqual([]);
  });

  it('times HTTP requests by route template, method and status on both apps', () => {
    const count = (samples: Sample[], labels: Record<string, string>) => total(samples, `${METRICS.httpRequestDuration}_count`, labels);
    expect(count(apiSamples, { route: '/v1/jobs/:type', method: 'POST', status: '200' })).toBeGreaterThanOrEqual(6);
    expect(count(apiSamples, { route: '/v1/jobs/:type', method: 'POST', status: '400' })).toBe(1);
    expect(count(apiSamples, { route: '/v1/jobs/:type', method: 'POST', status: '404' })).toBe(1);
    expect(count(apiSamples, { route: 'unmatched', method: 'GET', status: '404' })).toBe(1);
    expect(count(apiSamples, { route: '/v1/jobs/:id', method: 'DELETE' })).toBe(1);
    expect(count(workerSamples, { route: '/health/ready', method: 'GET', status: '200' })).toBeGreaterThanOrEqual(1);
    // Labels are templates only: no job id or type name ever becomes a route.
    const routes = new Set(series(apiSamples, `${METRICS.httpRequestDuration}_count`).map((s) => s.labels.route));
    expect([...routes].filter((r) => !['unmatched', '/metrics'].includes(r) && !/^\/(v1|health)\//.test(r))).toEqual([]);
    expect([...routes].filter((r) => /[0-9a-f]{8}-|fibonacci|no-such/.test(r))).toEqual([]);
    const seconds = total(apiSamples, `${METRICS.httpRequestDuration}_sum`, { method: 'POST', status: '400' });
    expect(seconds).toBeGreaterThan(0);
    expect(seconds).toBeLessThan(5);
  });

  it('counts submissions by type and outcome, and cache lookups by type and result', () => {
    const submitted = (type: string, outcome: string) => total(apiSamples, METRICS.jobsSubmitted, { type, outcome });
    expect([submitted('fibonacci', 'queued'), submitted('fibonacci', 'cached'), submitted('fibonacci', 'rejected'), submitted('fibonacci', 'joined')]).toEqual([1, 1, 1, 0]);
    expect(submitted('chaos', 'joined')).toBe(1);
    expect(submitted('chaos', 'queued')).toBe(5);
    expect(series(apiSamples, METRICS.jobsSubmitted).map((s) => s.labels.type)).not.toContain('no-such-type');
    const lookups = (result: string) => total(apiSamples, METRICS.cacheLookups, { type: 'fibonacci', result });
    expect([lookups('hit'), lookups('miss'), lookups('error')]).toEqual([1, 1, 0]);
    // chaos has caching off: it is never looked up.
    expect(series(apiSamples, METRICS.cacheLookups, { type: 'chaos' })).toEqual([]);
  });

  it('times how long jobs waited to start and took end to end, by type and queue', () => {
    const stat = (name: string, labels: Record<string, string>) => ({
      count: total(workerSamples, `${name}_count`, labels),
      sum: total(workerSamples, `${name}_sum`, labels),
    });
    const fibWait = stat(METRICS.jobWait, { type: 'fibonacci', queue: 'default' });
    const fibE2e = stat(METRICS.jobEndToEnd, { type: 'fibonacci', queue: 'default' });
    expect(fibWait.count).toBe(1);
    expect(fibE2e.count).toBe(1);
    expect(fibWait.sum).toBeGreaterThanOrEqual(0);
    expect(fibE2e.sum).toBeGreaterThanOrEqual(fibWait.sum);
    expect(fibE2e.sum).toBeLessThan(15);
    // Every chaos job started once (first attempts only); only the spin pair completed.
    expect(stat(METRICS.jobWait, { type: 'chaos', queue: 'default' }).count).toBe(5);
    expect(stat(METRICS.jobEndToEnd, { type: 'chaos', queue: 'default' }).count).toBe(1);
    const buckets = series(workerSamples, `${METRICS.jobWait}_bucket`, { type: 'fibonacci' });
    expect(buckets.find((b) => b.labels.le === '+Inf')?.value).toBe(1);
  });

  it('counts pool thread replacements by reason', () => {
    const replaced = (reason: string) => total(workerSamples, METRICS.poolThreadReplacements, { reason });
    // chaos retries a crash once: two threads died for it.
    expect({ timeout: replaced('timeout'), crash: replaced('crash'), out_of_memory: replaced('out_of_memory'), cancelled: replaced('cancelled') }).toEqual({
      timeout: 1,
      crash: 2,
      out_of_memory: 1,
      cancelled: 1,
    });
    expect(total(workerSamples, METRICS.poolThreads)).toBe(2);
    expect(total(workerSamples, METRICS.jobsFinished, { type: 'chaos', outcome: 'JOB_TIMEOUT' })).toBe(1);
  });

  it('reports each Redis connection role as connected', () => {
    const up = (samples: Sample[]) => Object.fromEntries(series(samples, METRICS.redisConnected).map((s) => [s.labels.connection, s.value]));
    expect(up(apiSamples)).toEqual({ queue: 1, cache: 1, events: 1, deadlines: 1, listing: 1 });
    expect(up(workerSamples)).toEqual({ queue: 1, cache: 1, cancel: 1 });
  });

  it('has sane values in the families that existed before', () => {
    expect(total(apiSamples, METRICS.queueBacklog)).toBe(0);
    expect(total(apiSamples, METRICS.queueJobs, { queue: 'default', state: 'completed' })).toBeGreaterThanOrEqual(2);
    expect(total(workerSamples, METRICS.jobsActive)).toBe(0);
    const utilization = total(workerSamples, METRICS.poolUtilization);
    expect(utilization).toBeGreaterThan(0);
    expect(utilization).toBeLessThanOrEqual(1);
    for (const samples of [apiSamples, workerSamples]) {
      const lag = total(samples, METRICS.eventLoopLagP99);
      expect(lag).toBeGreaterThan(0);
      expect(lag).toBeLessThan(1);
    }
  });

  it('gives the Grafana dashboard and the alert rules only metrics the apps export', () => {
    const exported = new Set([...apiSamples, ...workerSamples].map((s) => s.name));
    const expressions = monitoringExpressions();
    expect(expressions.length).toBeGreaterThan(20);
    const unknown = expressions.flatMap(({ where, expr }) => metricNamesIn(expr).filter((name) => !exported.has(name)).map((name) => `${where}: ${name}`));
    expect(unknown).toEqual([]);
    // Each expression names at least one metric (an extractor that finds nothing would pass anything).
    expect(expressions.filter(({ expr }) => metricNamesIn(expr).length === 0)).toEqual([]);
  });
});
