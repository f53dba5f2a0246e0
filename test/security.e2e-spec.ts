import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import IORedis from 'ioredis';
import { AppProcess, startApp, stackEnv } from './support/apps';
import { request, submit } from './support/http';
import { RedisServer } from './support/redis';
import { runEnv } from './support/test-run';
import { freePort, waitFor } from './support/wait';

const KEY_A = randomBytes(32).toString('hex');
const KEY_B = randomBytes(32).toString('hex');
const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

describe('API keys', () => {
  let api: AppProcess;

  beforeAll(async () => {
    api = await startApp('api', stackEnv('auth', { API_KEYS: `alice=${KEY_A},bob=${KEY_B}` }));
  });
  afterAll(() => api.stop());

  it('refuses /v1 without a valid key, with a problem and WWW-Authenticate', async () => {
    const attempts: Array<Record<string, string>> = [{}, bearer('wrong-key-0123456789'), { 'x-api-key': KEY_A.slice(0, -1) }, { authorization: `Basic ${KEY_A}` }];
    for (const headers of attempts) {
      const res = await request(`${api.url}/v1/job-types`, { headers });
      expect(res.status).toBe(401);
      expect(res.body).toMatchObject({ status: 401, code: 'UNAUTHORIZED' });
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/);
    }
    expect((await request(`${api.url}/v1/jobs/00000000-0000-4000-8000-000000000000`, { method: 'DELETE' })).status).toBe(401);
  });

  it('accepts a key as a Bearer token or in x-api-key', async () => {
    expect((await request(`${api.url}/v1/job-types`, { headers: bearer(KEY_A) })).status).toBe(200);
    expect((await request(`${api.url}/v1/job-types`, { headers: { 'x-api-key': KEY_B } })).status).toBe(200);
    const res = await submit(api.url, 'fibonacci', { n: 7 }, { headers: bearer(KEY_B) });
    expect(res.status).toBe(202);
  });

  it('checks the key before reading the body', async () => {
    const huge = JSON.stringify({ numbers: Array.from({ length: 3_000_000 }, () => 1) }); // 6 MB: over BODY_LIMIT
    const res = await request(`${api.url}/v1/jobs/fibonacci`, { method: 'POST', body: huge, headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(401);
  });

  it('leaves probes and metrics open', async () => {
    for (const path of ['/health/live', '/health/ready', '/metrics']) expect((await request(`${api.url}${path}`)).status).toBe(200);
  });

  it('never writes keys or passwords to the logs', async () => {
    await submit(api.url, 'private-echo', { text: 'hunter2-in-the-body' }, { headers: bearer(KEY_A) });
    await waitFor(() => api.logs.length > 0);
    const text = JSON.stringify(api.logs) + api.stderr.join('');
    expect(text).not.toContain(KEY_A);
    expect(text).not.toContain('hunter2-in-the-body');
  });
});

describe('rate limiting', () => {
  it('limits each client across all API replicas, answering 429 with Retry-After', async () => {
    const env = stackEnv('ratelimit', { API_KEYS: `alice=${KEY_A},bob=${KEY_B}`, RATE_LIMIT_PER_MINUTE: '60', RATE_LIMIT_BURST: '4' });
    const [one, two] = await Promise.all([startApp('api', env), startApp('api', env)]);
    try {
      const statuses: number[] = [];
      for (const api of [one, two, one, two, one]) statuses.push((await request(`${api.url}/v1/job-types`, { headers: bearer(KEY_A) })).status);
      expect(statuses).toEqual([200, 200, 200, 200, 429]);
      const limited = await request(`${two.url}/v1/job-types`, { headers: bearer(KEY_A) });
      expect(limited.status).toBe(429);
      expect(limited.body.code).toBe('RATE_LIMITED');
      expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      // Another key has its own budget; probes are never limited.
      expect((await request(`${one.url}/v1/job-types`, { headers: bearer(KEY_B) })).status).toBe(200);
      expect((await request(`${one.url}/health/ready`)).status).toBe(200);
    } finally {
      await Promise.all([one.stop(), two.stop()]);
    }
  });

  it('limits by client address when no keys are configured', async () => {
    const api = await startApp('api', stackEnv('ratelimit-ip', { RATE_LIMIT_PER_MINUTE: '60', RATE_LIMIT_BURST: '2' }));
    try {
      const statuses = [];
      for (let i = 0; i < 3; i++) statuses.push((await request(`${api.url}/v1/job-types`)).status);
      expect(statuses).toEqual([200, 200, 429]);
    } finally {
      await api.stop();
    }
  });
});

describe('hardening', () => {
  let api: AppProcess;

  beforeAll(async () => {
    api = await startApp('api', stackEnv('headers'));
  });
  afterAll(() => api.stop());

  it('sends helmet-style security headers and no server fingerprint', async () => {
    for (const path of ['/v1/job-types', '/v1/jobs/nope', '/health/live']) {
      const res = await request(`${api.url}${path}`);
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(res.headers.get('x-frame-options')).toBe('DENY');
      expect(res.headers.get('content-security-policy')).toContain("default-src 'none'");
      expect(res.headers.get('referrer-policy')).toBe('no-referrer');
      expect(res.headers.get('x-powered-by')).toBeNull();
      expect(res.headers.get('server')).toBeNull();
    }
  });

  it('refuses to run open in production', () => {
    const result = spawnSync(process.execPath, ['dist/apps/api/src/main.js'], {
      cwd: join(__dirname, '..'),
      env: { PATH: process.env.PATH, ...runEnv(), NODE_ENV: 'production' },
      encoding: 'utf8',
      timeout: 15_000,
    });
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('API_KEYS: required');
  });
});

describe('queue Redis safety', () => {
  it('warns, or refuses to run, when the queue Redis may evict keys', async () => {
    const redis = await RedisServer.start({ maxmemoryPolicy: 'allkeys-lru' });
    try {
      const env = stackEnv('eviction', { REDIS_URL: redis.url });
      const [api, worker] = await Promise.all([startApp('api', env), startApp('worker', env)]);
      for (const app of [api, worker]) {
        await waitFor(() => app.logs.some((l) => l.level >= 50 && /noeviction/.test(l.msg)), { what: `${app.kind} eviction warning` });
      }
      await Promise.all([api.stop(), worker.stop()]);

      const refusing = await startApp('worker', { ...env, REDIS_EVICTION_CHECK: 'refuse' }, { waitFor: 'none' });
      expect(await refusing.exited).toBe(1);
      expect(refusing.logs.some((l) => l.level === 60 && /allkeys-lru/.test(l.msg))).toBe(true);
    } finally {
      await redis.stop();
    }
  });

  it('talks to Redis over TLS with a password (rediss://)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'nest-offload-tls-'));
    const pem = (name: string) => join(dir, name);
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=localhost',
      '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1', '-keyout', pem('key.pem'), '-out', pem('cert.pem')], { stdio: 'ignore' });
    const port = await freePort();
    const password = 's3cret-pass';
    const server = spawn('redis-server', ['--port', '0', '--tls-port', String(port), '--bind', '127.0.0.1', '--save', '', '--dir', dir,
      '--tls-cert-file', pem('cert.pem'), '--tls-key-file', pem('key.pem'), '--tls-auth-clients', 'no', '--requirepass', password], { stdio: 'ignore' });
    try {
      const url = `rediss://:${password}@127.0.0.1:${port}`;
      await waitFor(async () => {
        const probe = new IORedis(url, { tls: { ca: readFileSync(pem('cert.pem')) }, lazyConnect: true, retryStrategy: () => null });
        probe.on('error', () => undefined);
        try {
          await probe.connect();
          return (await probe.ping()) === 'PONG';
        } finally {
          probe.disconnect();
        }
      }, { what: 'TLS redis' });
      // The apps trust the test CA the standard Node way; nothing in them is TLS-specific but the URL.
      const env = stackEnv('tls', { REDIS_URL: url, NODE_EXTRA_CA_CERTS: pem('cert.pem') });
      const [api, worker] = await Promise.all([startApp('api', env), startApp('worker', env)]);
      try {
        const res = await submit(api.url, 'fibonacci', { n: 11 }, { wait: 10 });
        expect(res.body).toMatchObject({ status: 'completed', result: 89 });
        expect(JSON.stringify([api.logs, worker.logs])).not.toContain(password);
      } finally {
        await Promise.all([api.stop(), worker.stop()]);
      }
    } finally {
      server.kill();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
