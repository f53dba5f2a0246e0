import { randomBytes } from 'node:crypto';
import { AppProcess, startAll, startApp, stackEnv } from './support/apps';
import { present } from './support/capabilities';
import { request } from './support/http';

const KEY = randomBytes(32).toString('hex');
const CLIENT_KEY = randomBytes(32).toString('hex');
const DASHBOARD = '/admin/queues';

/**
 * The queue dashboard (Bull Board, QUEUE_DASHBOARD=true): every queue the job types use, behind
 * the admin keys (a header, or the cookie /admin/login exchanges a key for), read-only unless
 * QUEUE_DASHBOARD_READONLY=false. Two APIs on one key prefix: read-only and not.
 */
describe('queue dashboard', () => {
  let readOnly: AppProcess;
  let writable: AppProcess;
  const env = stackEnv('dashboard', { API_KEYS: `web=${CLIENT_KEY}`, ADMIN_API_KEYS: `ops=${KEY}`, QUEUE_DASHBOARD: 'true', API_DOCS: String(present('docs')) });
  const auth = { 'x-api-key': KEY };
  const client = { 'x-api-key': CLIENT_KEY };
  const paused = async (api: AppProcess, queue: string) => {
    const { body } = await request(`${api.url}${DASHBOARD}/api/queues`, { headers: auth });
    return (body.queues as Array<{ name: string; isPaused: boolean }>).find((q) => q.name === queue)!.isPaused;
  };

  beforeAll(async () => {
    [readOnly, writable] = await startAll([startApp('api', env), startApp('api', { ...env, QUEUE_DASHBOARD_READONLY: 'false' })]);
  }, 60_000);

  afterAll(async () => {
    await Promise.all([readOnly?.stop(), writable?.stop()]);
  });

  it('needs an admin key: 401 without one, 403 for a client key, a sign-in page for a browser', async () => {
    for (const path of [DASHBOARD, `${DASHBOARD}/api/queues`, `${DASHBOARD}/static/favicon-32x32.png`]) {
      const open = await request(`${readOnly.url}${path}`);
      expect({ path, status: open.status, code: open.body?.code }).toEqual({ path, status: 401, code: 'UNAUTHORIZED' });
      expect(open.headers.get('www-authenticate')).toMatch(/^Bearer/);
      const wrong = await request(`${readOnly.url}${path}`, { headers: { 'x-api-key': `${KEY}x` } });
      expect(wrong.status).toBe(401);
      const clientKey = await request(`${readOnly.url}${path}`, { headers: client });
      expect({ path, status: clientKey.status, code: clientKey.body?.code }).toEqual({ path, status: 403, code: 'FORBIDDEN' });
    }
    const browser = await fetch(`${readOnly.url}${DASHBOARD}`, { headers: { accept: 'text/html,application/xhtml+xml' } });
    expect(browser.status).toBe(401);
    const html = await browser.text();
    expect(html).toContain('action="/admin/login"');
    expect(html).toContain(`value="${DASHBOARD}"`);
    expect((await fetch(`${readOnly.url}${DASHBOARD}`, { method: 'HEAD' })).status).toBe(401);
  });

  it('lists every queue a job type uses, with the key in either header', async () => {
    const types: Array<{ type: string; queue: string }> = (await request(`${readOnly.url}/v1/job-types`, { headers: client })).body;
    const page = await fetch(`${readOnly.url}${DASHBOARD}`, { headers: { authorization: `Bearer ${KEY}` } });
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('<div id="root">');
    // Its header links to the other admin pages this API serves (the dead letters', with that capability).
    const links = JSON.parse(/<script id="__UI_CONFIG__" type="application\/json">([^<]*)<\/script>/.exec(html)![1]).miscLinks as Array<{ text: string; url: string }>;
    expect(links.some((link) => link.url === '/admin/dead-letters')).toBe(present('dead-letters'));
    const { status, body } = await request(`${readOnly.url}${DASHBOARD}/api/queues`, { headers: auth });
    expect(status).toBe(200);
    const queues = body.queues as Array<{ name: string; description: string; readOnlyMode: boolean }>;
    expect(queues.map((q) => q.name).sort()).toEqual([...new Set(types.map((t) => t.queue))].sort());
    expect(queues.map((q) => q.name)).toEqual(expect.arrayContaining(['default', 'heavy']));
    for (const { type, queue } of types) {
      expect([type, queues.find((q) => q.name === queue)!.description]).toEqual([type, expect.stringContaining(type)]);
    }
  });

  it('is read-only by default; QUEUE_DASHBOARD_READONLY=false lets it change queues', async () => {
    const refused = await request(`${readOnly.url}${DASHBOARD}/api/queues/default/pause`, { method: 'PUT', headers: auth });
    expect(refused.status).toBe(405);
    expect(await paused(readOnly, 'default')).toBe(false);
    expect((await request(`${writable.url}${DASHBOARD}/api/queues`, { headers: auth })).body.queues[0].readOnlyMode).toBe(false);
    expect((await request(`${writable.url}${DASHBOARD}/api/queues/default/pause`, { method: 'PUT', headers: auth })).status).toBe(200);
    expect(await paused(readOnly, 'default')).toBe(true);
    expect((await request(`${writable.url}${DASHBOARD}/api/queues/default/resume`, { method: 'PUT', headers: auth })).status).toBe(200);
    expect(await paused(readOnly, 'default')).toBe(false);
  });

  it('signs a browser in with an admin key: an HttpOnly, SameSite=Strict cookie for the dashboard and the docs, not for /v1, until it signs out', async () => {
    const form = (key: string, next: string) => ({
      method: 'POST',
      redirect: 'manual' as const,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ key, next }).toString(),
    });
    const refused = await fetch(`${writable.url}/admin/login`, form('not-a-key-at-all-really', DASHBOARD));
    expect(refused.status).toBe(401);
    expect(refused.headers.get('set-cookie')).toBeNull();

    const login = await fetch(`${writable.url}/admin/login`, form(KEY, DASHBOARD));
    expect(login.status).toBe(303);
    expect(login.headers.get('location')).toBe(DASHBOARD);
    const setCookie = login.headers.get('set-cookie')!;
    // Outside production: no __Host- prefix and no Secure, so a development server over plain http works.
    expect(setCookie).toMatch(/^nest_offload_admin=[\w-]{43}; Path=\/; Max-Age=28800; HttpOnly; SameSite=Strict$/);
    const cookie = { cookie: setCookie.split(';')[0] };

    // Any replica on the same Redis accepts it.
    expect((await request(`${readOnly.url}${DASHBOARD}/api/queues`, { headers: cookie })).status).toBe(200);
    if (present('docs')) expect((await request(`${readOnly.url}/docs-json`, { headers: cookie })).status).toBe(200);
    expect((await request(`${readOnly.url}/v1/job-types`, { headers: cookie })).status).toBe(401);
    // A cookie riding on a cross-site request changes nothing; the same request from the page does.
    const crossSite = await request(`${writable.url}${DASHBOARD}/api/queues/default/pause`, { method: 'PUT', headers: { ...cookie, 'sec-fetch-site': 'cross-site' } });
    expect(crossSite.status).toBe(403);
    expect(await paused(writable, 'default')).toBe(false);
    const sameSite = await request(`${writable.url}${DASHBOARD}/api/queues/default/pause`, { method: 'PUT', headers: { ...cookie, 'sec-fetch-site': 'same-origin' } });
    expect(sameSite.status).toBe(200);
    await request(`${writable.url}${DASHBOARD}/api/queues/default/resume`, { method: 'PUT', headers: cookie });

    // Only its own pages are places to go back to after signing in: else the first (the docs, when served).
    for (const next of ['//evil.example/x', 'https://evil.example/', '/v1/job-types']) {
      expect((await fetch(`${writable.url}/admin/login`, form(KEY, next))).headers.get('location')).toBe(present('docs') ? '/docs' : DASHBOARD);
    }
    const logout = await fetch(`${writable.url}/admin/logout`, { method: 'POST', redirect: 'manual', headers: cookie });
    expect(logout.headers.get('set-cookie')).toMatch(/^nest_offload_admin=; Path=\/; Max-Age=0/);
    expect((await request(`${readOnly.url}${DASHBOARD}/api/queues`, { headers: cookie })).status).toBe(401);
  });

  it('serves its page under a policy that lets it run its own scripts only', async () => {
    const page = await fetch(`${readOnly.url}${DASHBOARD}`, { headers: auth });
    const csp = page.headers.get('content-security-policy')!;
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('unsafe-eval');
    // The API's own routes keep the API's policy.
    expect((await fetch(`${readOnly.url}/v1/job-types`, { headers: client })).headers.get('content-security-policy')).toBe("default-src 'none'; frame-ancestors 'none'");
  });
});
