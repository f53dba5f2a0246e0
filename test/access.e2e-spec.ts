import { randomBytes } from 'node:crypto';
import { type IncomingHttpHeaders, request as httpRequest } from 'node:http';
import IORedis from 'ioredis';
import { AppEnv, AppProcess, startAll, startApp, stackEnv } from './support/apps';
import { ifPresent, present } from './support/capabilities';

/**
 * Who may do what, on the built API in production mode: two client keys (alice, bob) and an admin
 * key (ops). Client addresses come from X-Forwarded-For only through TRUSTED_PROXIES; wrong keys
 * cost their address tries, shared by all replicas, and right keys none; the dashboard takes admin
 * keys only; a browser session ends on every replica when it signs out; weak keys stop start-up.
 *
 * Requests leave from chosen loopback addresses (Linux routes all of 127.0.0.0/8 to lo): 127.0.0.1
 * is an ordinary client, 127.0.0.2 the trusted proxy, whose X-Forwarded-For names other clients.
 */
const ALICE = randomBytes(32).toString('hex');
const BOB = randomBytes(32).toString('base64');
const ADMIN = randomBytes(32).toString('base64url');
/** Bare keys (no `name=`), listed after the named ones. */
const CAROL = randomBytes(32).toString('hex');
const DAVE = randomBytes(32).toString('hex');
const CLIENT = '127.0.0.1';
const PROXY = '127.0.0.2';
/** Whether this service serves a page for browsers, and so the sign-in form. */
const BROWSER_PAGES = present('docs') || present('queue-dashboard');

const production = (name: string, extra: AppEnv = {}): AppEnv =>
  stackEnv(name, {
    NODE_ENV: 'production',
    CHAOS_JOBS: 'false',
    API_KEYS: `alice=${ALICE},bob=${BOB}`,
    ADMIN_API_KEYS: `ops=${ADMIN}`,
    TRUSTED_PROXIES: `${PROXY}/32`,
    ...extra,
  });

interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  body: any;
}

/** One request sent from `localAddress`, on a connection of its own. */
function from(localAddress: string, url: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: init.method ?? 'GET', headers: init.headers, localAddress, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => {
        let body: unknown = text;
        try {
          body = text ? JSON.parse(text) : undefined;
        } catch {
          // not JSON: keep the text
        }
        resolve({ status: res.statusCode!, headers: res.headers, body });
      });
    });
    req.on('error', reject);
    req.end(init.body);
  });
}

const key = (k: string) => ({ 'x-api-key': k });
const viaProxy = (client: string, headers: Record<string, string> = {}) => ({ ...headers, 'x-forwarded-for': client });
const signInForm = (k: string, next = '/admin/queues') => ({
  method: 'POST',
  headers: { 'content-type': 'application/x-www-form-urlencoded' },
  body: new URLSearchParams({ key: k, next }).toString(),
});

describe('client addresses: X-Forwarded-For only from TRUSTED_PROXIES', () => {
  let api: AppProcess;

  beforeAll(async () => {
    // Without keys the rate limit counts by client address: what X-Forwarded-For could move.
    api = await startApp('api', production('xff', { API_KEYS: undefined, ALLOW_UNAUTHENTICATED: 'true', RATE_LIMIT_PER_MINUTE: '2', RATE_LIMIT_BURST: '2' }));
  });
  afterAll(() => api?.stop());

  it("ignores a spoofed X-Forwarded-For from any other peer, and honours a trusted proxy's: each client its own budget, IPv6 clients by /64", async () => {
    // From an ordinary client, spoofed addresses change nothing: its own budget of 2 applies.
    const spoofed: number[] = [];
    for (let n = 1; n <= 5; n++) spoofed.push((await from(CLIENT, `${api.url}/v1/job-types`, { headers: { 'x-forwarded-for': `10.0.0.${n}` } })).status);
    expect(spoofed).toEqual([200, 200, 429, 429, 429]);

    // From the trusted proxy, the address it appended is the client.
    const status = async (forwardedFor: string) => (await from(PROXY, `${api.url}/v1/job-types`, { headers: { 'x-forwarded-for': forwardedFor } })).status;
    const distinct: number[] = [];
    for (let n = 1; n <= 5; n++) distinct.push(await status(`198.51.100.${n}`));
    expect(distinct).toEqual([200, 200, 200, 200, 200]);
    // 198.51.100.1 has one left; whatever its client wrote before the address the proxy saw counts for nothing.
    expect([await status('198.51.100.1'), await status('203.0.113.77, 198.51.100.1'), await status('198.51.100.1')]).toEqual([200, 429, 429]);
    expect([await status('2001:db8:1:2::1'), await status('2001:db8:1:2:ffff::9'), await status('2001:db8:1:2::3')]).toEqual([200, 200, 429]);
    expect(await status('2001:db8:1:3::1')).toBe(200);
    // The proxy's own budget is untouched by all of the above.
    expect(await status('')).toBe(200);
  });
});

describe('guessing keys: wrong keys cost their address tries, on every replica', () => {
  let one: AppProcess;
  let two: AppProcess;

  beforeAll(async () => {
    // 10.0.0.0/8 as well: a cluster whose nodes share the pods' range (the prod overlay's old default).
    const env = production('guess', { API_DOCS: 'true', QUEUE_DASHBOARD: 'true', TRUSTED_PROXIES: `${PROXY}/32,10.0.0.0/8` });
    [one, two] = await startAll([startApp('api', env), startApp('api', env)]);
  }, 60_000);
  afterAll(async () => {
    await Promise.all([one?.stop(), two?.stop()]);
  });

  it('answers the 17th wrong key in a minute 429 on every replica, while right keys from that address are served', async () => {
    const wrong = () => randomBytes(32).toString('hex');
    // Sixteen wrong keys, half to each replica, at once: all of them counted, all 401.
    const first = await Promise.all(Array.from({ length: 16 }, (_, i) => from(CLIENT, `${(i % 2 ? two : one).url}/v1/job-types`, { headers: key(wrong()) })));
    expect(first.map((r) => r.status)).toEqual(Array(16).fill(401));
    const seventeenth = await from(CLIENT, `${one.url}/v1/job-types`, { headers: key(wrong()) });
    expect(seventeenth.status).toBe(429);
    expect(seventeenth.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(seventeenth.body).toMatchObject({ status: 429, code: 'RATE_LIMITED' });
    expect(Number(seventeenth.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    // Nobody at a shared address can lock out a key they do not have (#31): right keys are served on
    // /v1, the docs, the dashboard and the sign-in form, while wrong ones keep getting 429.
    for (const api of [one, two]) {
      expect((await from(CLIENT, `${api.url}/v1/job-types`, { headers: key(wrong()) })).status).toBe(429);
      expect((await from(CLIENT, `${api.url}/v1/job-types`, { headers: key(ALICE) })).status).toBe(200);
      if (present('docs')) expect((await from(CLIENT, `${api.url}/docs-json`, { headers: key(BOB) })).status).toBe(200);
      if (present('queue-dashboard')) expect((await from(CLIENT, `${api.url}/admin/queues/api/queues`, { headers: key(ADMIN) })).status).toBe(200);
      if (BROWSER_PAGES) {
        expect((await from(CLIENT, `${api.url}/admin/login`, signInForm(wrong()))).status).toBe(429);
        expect((await from(CLIENT, `${api.url}/admin/login`, signInForm(ADMIN))).status).toBe(303);
      }
    }
    // One wrong key a second keeps the address locked out, and alice served throughout.
    const kept: number[] = [];
    for (let i = 0; i < 5; i++) {
      kept.push((await from(CLIENT, `${two.url}/v1/job-types`, { headers: key(wrong()) })).status);
      kept.push((await from(CLIENT, `${one.url}/v1/job-types`, { headers: key(ALICE) })).status);
    }
    expect(kept).toEqual(Array(5).fill([429, 200]).flat());
  });

  (BROWSER_PAGES ? it : it.skip)('counts wrong keys on the sign-in form, the docs and the dashboard in the same tries as /v1; right keys take none', async () => {
    const client = '198.51.100.30';
    const right = await Promise.all(Array.from({ length: 30 }, () => from(PROXY, `${one.url}/v1/job-types`, { headers: viaProxy(client, key(BOB)) })));
    expect(right.map((r) => r.status)).toEqual(Array(30).fill(200));
    const wrong = randomBytes(32).toString('hex');
    // Sixteen wrong keys, taking turns on the pages this service serves.
    const surfaces = [
      () => from(PROXY, `${one.url}/admin/login`, { ...signInForm(wrong), headers: viaProxy(client, signInForm(wrong).headers) }),
      ...(present('docs') ? [() => from(PROXY, `${two.url}/docs-json`, { headers: viaProxy(client, key(wrong)) })] : []),
      ...(present('queue-dashboard') ? [() => from(PROXY, `${two.url}/admin/queues/api/queues`, { headers: viaProxy(client, key(wrong)) })] : []),
    ];
    const attempts = Array.from({ length: 16 }, (_, i) => surfaces[i % surfaces.length]());
    expect((await Promise.all(attempts)).map((r) => r.status)).toEqual(Array(16).fill(401));
    expect((await from(PROXY, `${one.url}/v1/job-types`, { headers: viaProxy(client, key(wrong)) })).status).toBe(429);
    expect((await from(PROXY, `${one.url}/v1/job-types`, { headers: viaProxy(client, key(BOB)) })).status).toBe(200);
  });

  it("reads one X-Forwarded-For hop: behind a node's SNAT, clients cannot pick a fresh address for each guess", async () => {
    // The ingress (the trusted proxy) appends the node it was sent from, in a trusted range; the
    // client's own entries to its left used to be read past it, a fresh budget per guess.
    const guesses: number[] = [];
    for (let i = 1; i <= 20; i++) {
      guesses.push((await from(PROXY, `${one.url}/v1/job-types`, { headers: viaProxy(`203.0.113.${i}, 10.20.0.5`, key(randomBytes(32).toString('hex'))) })).status);
    }
    expect(guesses).toEqual([...Array(16).fill(401), ...Array(4).fill(429)]);
  });

  it('keeps client addresses out of Redis: the tries are kept under a hash', async () => {
    // A wrong key from one more address behind the proxy: its tries, and the first case's, are in Redis.
    expect((await from(PROXY, `${one.url}/v1/job-types`, { headers: viaProxy('198.51.100.40', key(randomBytes(32).toString('hex'))) })).status).toBe(401);
    const redis = new IORedis(process.env.E2E_REDIS_URL!);
    try {
      const keys = await redis.keys(`${one.env.REDIS_PREFIX}:auth-failures:*`);
      expect(keys.length).toBeGreaterThanOrEqual(2);
      expect(keys.join(' ')).not.toMatch(/127\.0\.0|198\.51\.100/);
    } finally {
      redis.disconnect();
    }
  });
});

describe('the admin role: ADMIN_API_KEYS for /admin/*, client keys for /v1, either for /docs', () => {
  let one: AppProcess;
  let two: AppProcess;

  beforeAll(async () => {
    const env = production('admin', { API_DOCS: 'true', QUEUE_DASHBOARD: 'true' });
    // Replica two runs as after a rolling update that revoked the bare key CAROL (see the bare keys'
    // case), and with the docs off (a client key's session would open nothing there).
    [one, two] = await startAll([
      startApp('api', { ...env, API_KEYS: `${env.API_KEYS},${CAROL},${DAVE}` }),
      startApp('api', { ...env, API_KEYS: `${env.API_KEYS},${DAVE}`, API_DOCS: 'false' }),
    ]);
  }, 60_000);
  afterAll(async () => {
    await Promise.all([one?.stop(), two?.stop()]);
  });

  ifPresent('queue-dashboard').it('answers a client key 403 on the dashboard and its API, and serves an admin key', async () => {
    for (const path of ['/admin/queues', '/admin/queues/api/queues']) {
      for (const client of [ALICE, BOB]) {
        const res = await from(CLIENT, `${one.url}${path}`, { headers: key(client) });
        expect({ path, status: res.status, type: res.headers['content-type'], code: res.body?.code }).toEqual({
          path,
          status: 403,
          type: 'application/problem+json; charset=utf-8',
          code: 'FORBIDDEN',
        });
      }
      expect((await from(CLIENT, `${one.url}${path}`, { headers: { authorization: `Bearer ${ADMIN}` } })).status).toBe(200);
    }
    const pause = await from(CLIENT, `${one.url}/admin/queues/api/queues/default/pause`, { method: 'PUT', headers: key(ALICE) });
    expect(pause.status).toBe(403);
    // A client key's browser session opens the docs, not the dashboard.
    if (!present('docs')) return;
    const login = await from(CLIENT, `${one.url}/admin/login`, signInForm(ALICE, '/docs'));
    expect(login.status).toBe(303);
    const cookie = { cookie: login.headers['set-cookie']![0].split(';')[0] };
    expect((await from(CLIENT, `${one.url}/docs-json`, { headers: cookie })).status).toBe(200);
    expect((await from(CLIENT, `${one.url}/admin/queues/api/queues`, { headers: cookie })).status).toBe(403);
  });

  it('reads the docs with either kind of key, and refuses an admin key on /v1', async () => {
    if (present('docs')) for (const k of [ALICE, ADMIN]) expect((await from(CLIENT, `${one.url}/docs-json`, { headers: key(k) })).status).toBe(200);
    expect((await from(CLIENT, `${one.url}/v1/job-types`, { headers: key(ALICE) })).status).toBe(200);
    const admin = await from(CLIENT, `${one.url}/v1/job-types`, { headers: key(ADMIN) });
    expect({ status: admin.status, code: admin.body?.code }).toEqual({ status: 403, code: 'FORBIDDEN' });
  });

  it('names a bare key by its hash: revoking one hands none of its jobs or Idempotency-Keys to another', async () => {
    const submit = (api: AppProcess, k: string, idempotencyKey: string, n: number) =>
      from(CLIENT, `${api.url}/v1/jobs/fibonacci`, {
        method: 'POST',
        headers: { ...key(k), 'content-type': 'application/json', 'idempotency-key': idempotencyKey },
        body: JSON.stringify({ n }),
      });
    const order = `order-${randomBytes(4).toString('hex')}`;
    const job = await submit(one, CAROL, order, 31);
    expect(job.status).toBe(202);
    expect((await from(CLIENT, `${one.url}/v1/jobs/${job.body.id}`, { headers: key(DAVE) })).status).toBe(404);
    // On the replica without CAROL, DAVE moved up the list: it still sees nothing of CAROL's.
    expect((await from(CLIENT, `${two.url}/v1/jobs/${job.body.id}`, { headers: key(DAVE) })).status).toBe(404);
    // Its own use of the same Idempotency-Key is a first use, not a conflict with CAROL's.
    const own = await submit(two, DAVE, order, 32);
    expect({ status: own.status, same: own.body?.id === job.body.id }).toEqual({ status: 202, same: false });
  });

  ifPresent('queue-dashboard').it('signs in only keys a served page takes, at most 20 sessions a key, and sends the browser back to ASCII paths only', async () => {
    // The docs off: a client key's session would open nothing, so it opens none.
    const refused = await from(CLIENT, `${two.url}/admin/login`, signInForm(ALICE, '/admin/queues'));
    expect({ status: refused.status, code: refused.body?.code, cookie: refused.headers['set-cookie'] }).toEqual({ status: 403, code: 'FORBIDDEN', cookie: undefined });
    // Twenty-one sign-ins by one key: the first session ends.
    const cookies: string[] = [];
    for (let i = 0; i < 21; i++) {
      const login = await from(CLIENT, `${one.url}/admin/login`, signInForm(ADMIN));
      expect(login.status).toBe(303);
      cookies.push(login.headers['set-cookie']![0].split(';')[0]);
    }
    const opens = async (cookie: string) => (await from(CLIENT, `${one.url}/admin/queues/api/queues`, { headers: { cookie } })).status;
    expect([await opens(cookies[0]), await opens(cookies[1]), await opens(cookies[20])]).toEqual([401, 200, 200]);
    // A next past ASCII (as a crafted link would send it) falls back to the first page; the cookie is sent.
    const firstPage = present('docs') ? '/docs' : '/admin/queues';
    for (const next of ['/admin/queues/\u0100', '/docs/\u0100', '/admin/queues/caf\u00e9']) {
      const login = await from(CLIENT, `${one.url}/admin/login`, signInForm(ADMIN, next));
      expect({ next, status: login.status, location: login.headers.location, cookie: login.headers['set-cookie']?.length }).toEqual({ next, status: 303, location: firstPage, cookie: 1 });
      cookies.push(login.headers['set-cookie']![0].split(';')[0]);
    }
    const encoded = await from(CLIENT, `${one.url}/admin/login`, signInForm(ADMIN, '/admin/queues/%C4%80'));
    expect(encoded.headers.location).toBe('/admin/queues/%C4%80');
    cookies.push(encoded.headers['set-cookie']![0].split(';')[0]);
    // Signed out again: the session case counts the admin's sessions in Redis.
    for (const cookie of cookies) await from(CLIENT, `${one.url}/admin/logout`, { method: 'POST', headers: { cookie, 'sec-fetch-site': 'same-origin' } });
  });

  ifPresent('queue-dashboard').it('keeps a browser session in Redis, as a hash: signing out on one replica refuses its cookie on every replica', async () => {
    const login = await from(CLIENT, `${one.url}/admin/login`, signInForm(ADMIN));
    expect(login.status).toBe(303);
    const setCookie = login.headers['set-cookie']![0];
    expect(setCookie).toMatch(/^__Host-nest_offload_admin=[\w-]{43}; Path=\/; Max-Age=28800; HttpOnly; SameSite=Strict; Secure$/);
    const token = setCookie.split(';')[0].split('=')[1];
    const cookie = { cookie: setCookie.split(';')[0] };
    expect((await from(CLIENT, `${two.url}/admin/queues/api/queues`, { headers: cookie })).status).toBe(200);

    const redis = new IORedis(process.env.E2E_REDIS_URL!);
    try {
      const keys = await redis.keys(`${one.env.REDIS_PREFIX}:admin-session:*`);
      const kept = await Promise.all(keys.map(async (k) => ({ key: k, value: (await redis.get(k))!, ttl: await redis.ttl(k) })));
      expect(JSON.stringify(kept)).not.toContain(token);
      const ours = kept.filter((k) => k.value.includes('"name":"ops","role":"admin"'));
      expect(ours).toHaveLength(1);
      expect(ours[0].ttl).toBeGreaterThan(28_000);
    } finally {
      redis.disconnect();
    }

    // Signing out takes the same cross-site check as signing in.
    const crossSite = await from(CLIENT, `${one.url}/admin/logout`, { method: 'POST', headers: { ...cookie, 'sec-fetch-site': 'cross-site' } });
    expect(crossSite.status).toBe(403);
    expect((await from(CLIENT, `${two.url}/admin/queues/api/queues`, { headers: cookie })).status).toBe(200);

    const logout = await from(CLIENT, `${one.url}/admin/logout`, { method: 'POST', headers: { ...cookie, 'sec-fetch-site': 'same-origin' } });
    expect(logout.status).toBe(303);
    expect(logout.headers['set-cookie']![0]).toMatch(/^__Host-nest_offload_admin=; Path=\/; Max-Age=0; HttpOnly; SameSite=Strict; Secure$/);
    for (const api of [two, one]) {
      const refused = await from(CLIENT, `${api.url}/admin/queues/api/queues`, { headers: cookie });
      expect({ status: refused.status, code: refused.body?.code }).toEqual({ status: 401, code: 'UNAUTHORIZED' });
      const page = await from(CLIENT, `${api.url}/admin/queues`, { headers: { ...cookie, accept: 'text/html' } });
      expect(page.status).toBe(401);
      expect(page.body).toContain('action="/admin/login"');
    }
  });
});

describe('weak keys', () => {
  it.each([
    // Keys a review started production with (#31): a run, a phrase, a named key.
    ['API_KEYS', { API_KEYS: `alice=0123456789abcdef0123456789abcdef,bob=${BOB}` }, 'API_KEYS: the key named "alice" is too weak', '0123456789abcdef'],
    ['API_KEYS', { API_KEYS: `alice=${ALICE},bob=Password!2024#Spring` }, 'API_KEYS: the key named "bob" is too weak', 'Password!2024#Spring'],
    ['ADMIN_API_KEYS', { ADMIN_API_KEYS: 'ops=CompanyName-prod-api-key-2024-v1' }, 'ADMIN_API_KEYS: the key named "ops" is too weak', 'CompanyName'],
  ])('stop start-up, naming %s and the key, never the key itself', async (_variable, env, message, weak) => {
    const api = await startApp('api', production('weak', env), { waitFor: 'none' });
    let timer: NodeJS.Timeout | undefined;
    const code = await Promise.race([api.exited, new Promise<string>((resolve) => (timer = setTimeout(() => resolve('still running after 20 s'), 20_000)))]);
    clearTimeout(timer);
    await api.stop('SIGKILL');
    const stderr = api.stderr.join('');
    expect(code).toBe(1);
    expect(stderr).toContain(message);
    expect(stderr).not.toContain(weak);
  }, 30_000);
});
