import { type AclUser, aclDenials, shippedUsers, startSecureRedis } from './support/acl-users';
import { type AppEnv, type AppProcess, startAll, startApp, stackEnv, uniquePrefix } from './support/apps';
import { request } from './support/http';
import { expectStackWorks } from './support/stack-probes';
import { TestCa } from './support/test-ca';
import { freePort, waitFor } from './support/wait';

type SecureRedis = Awaited<ReturnType<typeof startSecureRedis>>;

/**
 * Redis as managed offerings run it: TLS only, with a certificate from a private CA (trusted through
 * REDIS_TLS_CA_FILE), the `default` user off, and each app logging in as the ACL user
 * docker/redis/users.conf ships for it, for the queue and for a separate cache Redis. The apps work
 * as they do on a plain Redis, with no command, key or channel denied; a wrong password or a
 * certificate the CA file does not vouch for stops them at start-up naming the variable to fix,
 * while a Redis that does not answer still leaves them live but not ready.
 */
describe('Redis with TLS and least-privilege ACL users (standalone queue and cache)', () => {
  const prefix = uniquePrefix('redis-tls');
  const apps: AppProcess[] = [];
  let ca: TestCa | undefined;
  let otherCa: TestCa | undefined;
  let queue: SecureRedis | undefined;
  let cache: SecureRedis | undefined;
  let users: Record<string, AclUser>;
  let env: AppEnv;
  let api: AppProcess;

  const asUser = (user: AclUser): AppEnv => ({ REDIS_USERNAME: user.name, REDIS_PASSWORD: user.password });

  beforeAll(async () => {
    ca = TestCa.create('nest-offload test CA');
    otherCa = TestCa.create('another CA');
    users = shippedUsers('docker/redis/users.conf', prefix);
    const tls = ca.issue('redis');
    [queue, cache] = await startAll([startSecureRedis(tls, [users.api, users.worker]), startSecureRedis(tls, [users.cache])] as const);
    env = stackEnv('redis-tls', {
      REDIS_PREFIX: prefix,
      REDIS_URL: `rediss://127.0.0.1:${queue.node.port}`,
      CACHE_REDIS_URL: `rediss://${users.cache.name}:${users.cache.password}@127.0.0.1:${cache.node.port}`,
      REDIS_TLS_CA_FILE: ca.file,
      CACHE_MEMORY_MB: '0',
    });
    const started = await startAll([startApp('api', { ...env, ...asUser(users.api) }), startApp('worker', { ...env, ...asUser(users.worker) })] as const);
    apps.push(...started);
    api = started[0];
  });

  afterAll(async () => {
    await Promise.all(apps.map((app) => app.stop()));
    await Promise.all([queue?.stop(), cache?.stop()]);
    ca?.remove();
    otherCa?.remove();
  });

  it('runs, streams, cancels and caches jobs as each app’s ACL user, over TLS trusted through REDIS_TLS_CA_FILE', async () => {
    await expectStackWorks(api, { queue: queue!.node, cache: cache!.node, prefix });
  });

  it('stops both apps at start-up for a wrong password or a certificate from another CA, naming the variable; starts them not ready when Redis does not answer', async () => {
    const silent = await freePort();
    const runs = [
      ['api', { ...env, ...asUser(users.api), REDIS_PASSWORD: 'not-the-password' }],
      ['worker', { ...env, ...asUser(users.worker), REDIS_PASSWORD: 'not-the-password' }],
      ['api', { ...env, ...asUser(users.api), REDIS_TLS_CA_FILE: otherCa!.file }],
      ['worker', { ...env, ...asUser(users.worker), REDIS_TLS_CA_FILE: otherCa!.file }],
      ['worker', { ...env, ...asUser(users.worker), CACHE_REDIS_URL: `rediss://${users.cache.name}:not-the-password@127.0.0.1:${cache!.node.port}` }],
      ['api', { ...env, ...asUser(users.api), REDIS_URL: `rediss://127.0.0.1:${silent}` }],
      ['worker', { ...env, ...asUser(users.worker), REDIS_URL: `rediss://127.0.0.1:${silent}` }],
    ] as const;
    const started = await startAll(runs.map(([kind, runEnv]) => startApp(kind, runEnv, { waitFor: 'none' })));
    apps.push(...started);
    const refused = started.slice(0, 5);
    const codes = await Promise.all(refused.map((app) => app.exited));
    const stderr = refused.map((app) => app.stderr.join(''));
    expect(codes).toEqual([1, 1, 1, 1, 1]);
    const port = queue!.node.port;
    const wrongPassword = new RegExp(
      `REDIS_PASSWORD: 127\\.0\\.0\\.1:${port} \\(from REDIS_URL\\) refused the credentials REDIS_USERNAME/REDIS_PASSWORD give \\(user "nest-offload-(api|worker)"\\): WRONGPASS invalid username-password pair`,
    );
    const otherCaCert = new RegExp(`REDIS_TLS_CA_FILE: the certificate of 127\\.0\\.0\\.1:${port} \\(from REDIS_URL\\) is signed by no CA in REDIS_TLS_CA_FILE`);
    expect(stderr).toEqual([
      expect.stringMatching(wrongPassword),
      expect.stringMatching(wrongPassword),
      expect.stringMatching(otherCaCert),
      expect.stringMatching(otherCaCert),
      expect.stringMatching(`CACHE_REDIS_URL: 127\\.0\\.0\\.1:${cache!.node.port} refused the credentials in the URL \\(user "nest-offload-cache"\\): WRONGPASS`),
    ]);
    for (const text of stderr) {
      expect(text).not.toMatch(/\n\s+at /); // a message for the operator, not a stack trace
      expect(text).not.toContain('not-the-password');
    }
    console.log(`[redis-tls] start-up refusals:\n${stderr.join('')}`);

    // Nothing answers on `silent`: an outage, not a wrong setting.
    for (const app of started.slice(5)) {
      await app.live();
      const ready = await request(`${app.url}/health/ready`);
      expect(ready).toMatchObject({ status: 503, body: { checks: { queueRedis: expect.stringMatching(/^redis (connecting|reconnecting)$/) } } });
    }
  });

  it('says why in readiness and an error line when the password is changed under a running app, and recovers when it is set back', async () => {
    const admin = queue!.node;
    await admin.client(async (c) => {
      await c.call('ACL', 'SETUSER', users.api.name, 'resetpass', '>rotated-elsewhere');
      await c.call('CLIENT', 'KILL', 'USER', users.api.name);
    });
    let reason = '';
    await waitFor(
      async () => {
        const ready = await request(`${api.url}/health/ready`);
        reason = ready.body.checks.queueRedis;
        return ready.status === 503 && reason.startsWith('REDIS_PASSWORD');
      },
      { what: 'readiness naming REDIS_PASSWORD' },
    );
    expect(reason).toMatch(/^REDIS_PASSWORD: 127\.0\.0\.1:\d+ \(from REDIS_URL\) refused the credentials .*: WRONGPASS/);
    await waitFor(() => api.logs.some((l) => l.level === 50 && l.msg.includes(reason)), { what: 'an error line naming REDIS_PASSWORD' });

    await admin.client((c) => c.call('ACL', 'SETUSER', users.api.name, 'resetpass', `>${users.api.password}`));
    await api.ready(15_000);
    expect(api.logs.some((l) => l.level === 30 && l.msg.startsWith('Redis accepts the connection again'))).toBe(true);
  });

  it('was denied no command, key or channel on either Redis', async () => {
    expect(await aclDenials(queue!.node)).toEqual([]);
    expect(await aclDenials(cache!.node)).toEqual([]);
  });
});
