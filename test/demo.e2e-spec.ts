import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { compileBench } from '../bench/support/compile';
import { startNode } from '../bench/support/stack';
import { AppProcess, startAll, startApp, stackEnv } from './support/apps';
import { launchBrowser } from './support/browser';
import { request } from './support/http';
import { waitFor } from './support/wait';

const ROOT = join(__dirname, '..');

interface TargetState {
  enabled: boolean;
  pings: Array<{ ms: number }>;
  loops: Array<{ p99: number; max: number }>;
  draws: number;
  sent: number;
  done: number;
  failed: number;
  error: string;
}

/**
 * The /demo page (DEMO=true) in headless Chromium: it plots the template's and the in-handler
 * baseline's ping latency and event-loop delay, live, and fires CPU jobs at either.
 */
describe('demo page', () => {
  const build = join(ROOT, 'bench', `.build-test-demo-${randomBytes(4).toString('hex')}`);
  const env = stackEnv('demo', { DEMO: 'true' });
  let api: AppProcess;
  let worker: AppProcess;
  let baseline: AppProcess;
  let browser: Browser;
  let page: Page;
  /** Console errors and uncaught exceptions of the page (a CSP violation shows up here). */
  const pageErrors: string[] = [];

  // why: page scripts are passed as text; this project compiles without the DOM typings.
  const state = (id: 'template' | 'baseline') =>
    page.evaluate<Omit<TargetState, 'pings'> & { pings: number }>(
      `(() => { const t = window.demo.targets['${id}']; return { enabled: t.enabled, pings: t.pings.length, loops: t.loops, draws: t.draws, sent: t.sent, done: t.done, failed: t.failed, error: t.error }; })()`,
    );
  const chartImage = () => page.evaluate<string>(`document.querySelector('#template canvas').toDataURL()`);
  const blankImage = () =>
    page.evaluate<string>(
      `(() => { const c = document.querySelector('#template canvas'); const e = document.createElement('canvas'); e.width = c.width; e.height = c.height; return e.toDataURL(); })()`,
    );

  beforeAll(async () => {
    compileBench(ROOT, build);
    // why startAll: if the browser cannot start, the apps started beside it are stopped before the error.
    [api, worker, baseline, browser] = await startAll([
      startApp('api', env),
      startApp('worker', env),
      startNode(join(build, 'bench', 'baselines', 'baseline.main.js'), { REDIS_URL: env.REDIS_URL, REDIS_PREFIX: `${env.REDIS_PREFIX}-baseline`, BASELINE_MODE: 'inline' }, { cwd: ROOT }),
      launchBrowser(),
    ]);
    page = await browser.newPage();
    page.on('console', (message) => void (message.type() === 'error' && pageErrors.push(message.text())));
    page.on('pageerror', (error) => void pageErrors.push(String(error)));
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await Promise.all([api?.stop(), worker?.stop(), baseline?.stop()]);
    rmSync(build, { recursive: true, force: true });
  });

  it('serves the page and its probes', async () => {
    const html = await fetch(`${api.url}/demo`);
    expect(html.status).toBe(200);
    expect(html.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await html.text()).toContain('<canvas>');
    expect((await request(`${api.url}/demo/ping`)).body).toMatchObject({ ok: true });
    const loop = await waitFor(async () => {
      const { body } = await request(`${api.url}/demo/loop`);
      return body.samples > 0 ? body : undefined;
    }, { what: 'a full second of loop samples', timeoutMs: 5000 });
    expect(loop).toEqual({ p50Ms: expect.any(Number), p99Ms: expect.any(Number), maxMs: expect.any(Number), windowMs: expect.any(Number), samples: expect.any(Number) });
  });

  it('plots both servers and keeps updating the chart', async () => {
    await page.goto(`${api.url}/demo?baseline=${baseline.url}`);
    for (const id of ['template', 'baseline'] as const) {
      await waitFor(async () => {
        const s = await state(id);
        return s.pings >= 3 && s.loops.length >= 1 && !s.error;
      }, { what: `${id} samples on the page`, timeoutMs: 15_000 });
    }
    // why the count first: a redraw between reading the image and the count would leave the count
    // already past the image, and the next change would not raise it again.
    const drawsBefore = (await state('template')).draws;
    const first = await chartImage();
    expect(first).not.toBe(await blankImage());
    await waitFor(async () => (await chartImage()) !== first, { what: 'the chart to change', timeoutMs: 5000 });
    expect((await state('template')).draws).toBeGreaterThan(drawsBefore);
    expect(await page.locator('#template [data-stats]').textContent()).toMatch(/ping \(last 10 s\) p50 \d/);
    expect(pageErrors).toEqual([]);
  });

  it('fires CPU jobs at each side; the in-handler baseline\'s event loop stalls', async () => {
    // why chaos's spin: busy for `ms` whatever the machine, and registered whichever examples were removed.
    await page.selectOption('#work', 'chaos');
    await page.fill('#size', '300');
    await page.fill('#count', '4');
    await page.click('#baseline [data-fire]');
    await page.click('#template [data-fire]');
    for (const id of ['template', 'baseline'] as const) {
      await waitFor(async () => {
        const s = await state(id);
        return s.sent === 4 && s.done === 4;
      }, { what: `4 jobs done at the ${id}`, timeoutMs: 30_000 });
    }
    // Four 300 ms jobs computed back to back in the baseline's handler hold its loop for over a second.
    await waitFor(async () => (await state('baseline')).loops.some((l) => l.max >= 80), { what: 'a stalled baseline loop on the chart', timeoutMs: 5000 });
    expect((await state('template')).failed).toBe(0);
    // The counters are redrawn on the page's next tick.
    await waitFor(async () => (await page.locator('#template [data-jobs]').textContent()) === '4 / 4 jobs done', { what: 'the job counter', timeoutMs: 2000 });
    expect(pageErrors).toEqual([]);
  });

  it('is not served unless DEMO=true', async () => {
    const plain = await startApp('api', stackEnv('demo-off'));
    try {
      expect((await fetch(`${plain.url}/demo`)).status).toBe(404);
      expect((await fetch(`${plain.url}/demo/loop`)).status).toBe(404);
    } finally {
      await plain.stop();
    }
  });
});
