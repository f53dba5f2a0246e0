import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { JobRegistry } from '@app/jobs';
import { AppProcess, startAll, startApp, stackEnv } from './support/apps';
import { launchBrowser } from './support/browser';
import { ifPresent, present } from './support/capabilities';
import { request, submit } from './support/http';

const KEY = randomBytes(32).toString('hex');
const ADMIN_KEY = randomBytes(32).toString('base64url');
/** `UPDATE_SCREENSHOTS=1 npx jest test/pages.e2e-spec.ts` refreshes the pictures in docs/images. */
const SCREENSHOTS = process.env.UPDATE_SCREENSHOTS === '1' ? join(__dirname, '..', 'docs', 'images') : undefined;
/** Bull Board's page links a Google Fonts stylesheet; the page policy blocks it (no third parties). */
const EXPECTED_BLOCKS = /fonts\.googleapis\.com/;
/** What the apps serve here (CHAOS_JOBS=false): the types and queues of a production deployment. */
const registry = JobRegistry.forConfig({ chaosJobs: false });
const QUEUES = registry.queues();
/** The page a browser signs in on: the first served (the docs, when this service kept them). */
const FIRST_PAGE = present('docs') ? '/docs' : '/admin/queues';

/**
 * The pages people open, in headless Chromium, behind the keys: sign in with an admin key, then the
 * API docs (Swagger UI) render every operation and run a job with a client key, and the dashboard
 * shows every queue, all under the pages' Content-Security-Policy (a violation is a console error,
 * and fails).
 */
(present('docs') || present('queue-dashboard') ? describe : describe.skip)('docs and dashboard pages', () => {
  let api: AppProcess;
  let worker: AppProcess;
  let browser: Browser;
  let page: Page;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    const env = stackEnv('pages', { API_KEYS: `web=${KEY}`, ADMIN_API_KEYS: `ops=${ADMIN_KEY}`, API_DOCS: 'true', QUEUE_DASHBOARD: 'true', CHAOS_JOBS: 'false' });
    [api, worker, browser] = await startAll([startApp('api', env), startApp('worker', env), launchBrowser()]);
    page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
    page.on('console', (message) => void (message.type() === 'error' && !EXPECTED_BLOCKS.test(message.text()) && pageErrors.push(message.text())));
    page.on('pageerror', (error) => void pageErrors.push(String(error)));
    if (SCREENSHOTS) mkdirSync(SCREENSHOTS, { recursive: true });
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await Promise.all([api?.stop(), worker?.stop()]);
  });

  it('asks a browser without a key to sign in, and signs it in with one', async () => {
    const denied = await page.goto(`${api.url}${FIRST_PAGE}`);
    expect(denied!.status()).toBe(401);
    await page.fill('input[name=key]', 'not-one-of-the-keys-at-all');
    await page.click('button[type=submit]');
    expect(await page.locator('[role=alert]').textContent()).toMatch(/not one of the keys/);
    await page.fill('input[name=key]', ADMIN_KEY);
    await Promise.all([page.waitForURL(`${api.url}${FIRST_PAGE}`), page.click('button[type=submit]')]);
    // The two refusals above, and nothing else.
    expect(pageErrors).toEqual([expect.stringMatching(/status of 401/), expect.stringMatching(/status of 401/)]);
    pageErrors.length = 0;
  });

  ifPresent('docs').it('shows every operation of the API docs, and runs a job from them with the key', async () => {
    const doc = (await request(`${api.url}/docs-json`, { headers: { 'x-api-key': KEY } })).body;
    const operations = Object.values(doc.paths as Record<string, object>).reduce((n, item) => n + Object.keys(item).length, 0);
    await page.waitForSelector('.opblock', { timeout: 20_000 });
    expect(await page.locator('.opblock').count()).toBe(operations);
    expect(await page.locator('.info .title').textContent()).toContain('nest-offload');

    // Authorize with the key, then "Try it out" on POST /v1/jobs/fibonacci with its example.
    await page.click('button.authorize');
    await page.locator('.modal-ux input[type=text], .modal-ux input[type=password]').last().fill(KEY);
    await page.locator('.modal-ux .auth-btn-wrapper button.authorize').last().click();
    await page.click('.modal-ux button.btn-done');
    const operation = page.locator('#operations-jobs-JobsController_submit_fibonacci');
    await operation.locator('.opblock-summary').click();
    if (SCREENSHOTS) await page.screenshot({ path: join(SCREENSHOTS, 'docs.png') });
    await operation.locator('button.execute').click();
    await operation.locator('.live-responses-table tbody .response-col_status').first().waitFor({ timeout: 20_000 });
    expect(await operation.locator('.live-responses-table tbody .response-col_status').first().textContent()).toMatch(/^20[02]/);
    expect(pageErrors).toEqual([]);
  });

  ifPresent('queue-dashboard').it('shows every queue on the dashboard, read-only', async () => {
    for (let n = 20; n < 26; n++) await submit(api.url, 'fibonacci', { n }, { wait: 10, headers: { 'x-api-key': KEY } });
    // A job in every other queue: the first example of its first type.
    for (const queue of QUEUES.filter((q) => q !== 'default')) {
      const def = registry.list().find((d) => d.queue === queue)!;
      await submit(api.url, def.name, def.examples[0], { wait: 10, headers: { 'x-api-key': KEY } });
    }
    await page.goto(`${api.url}/admin/queues`);
    for (const queue of QUEUES) await page.getByText(queue, { exact: true }).first().waitFor({ timeout: 20_000 });
    // The overview: one card per queue, with its job count.
    await page.getByText(/^\d+ Jobs?$/).nth(QUEUES.length - 1).waitFor({ timeout: 20_000 });
    // One queue's jobs, with their data and results.
    await page.getByText('default', { exact: true }).first().click();
    await page.getByText('fibonacci', { exact: true }).first().waitFor({ timeout: 20_000 });
    if (SCREENSHOTS) await page.screenshot({ path: join(SCREENSHOTS, 'dashboard.png') });
    // The page's own calls ride on the sign-in cookie.
    const { queues } = (await (await page.request.get(`${api.url}/admin/queues/api/queues`)).json()) as { queues: Array<{ name: string; readOnlyMode: boolean }> };
    expect(queues.map((q) => [q.name, q.readOnlyMode])).toEqual(QUEUES.map((queue) => [queue, true]));
    expect(pageErrors).toEqual([]);
  });
});
