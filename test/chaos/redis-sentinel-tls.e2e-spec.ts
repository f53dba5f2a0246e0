import { type AclUser, aclDenials, shippedUsers, startSecureRedis } from '../support/acl-users';
import { type AppEnv, type AppProcess, startAll, startApp, stackEnv, uniquePrefix } from '../support/apps';
import { expectOnly503s, SubmitLoad } from '../support/failover';
import { Ledger } from '../support/ledger';
import { SentinelSet } from '../support/redis-ha';
import { expectStackWorks } from '../support/stack-probes';
import { TestCa } from '../support/test-ca';

/**
 * The Sentinel topology as a managed offering runs it: data nodes and Sentinels serving TLS only
 * with certificates from a private CA (REDIS_TLS_CA_FILE), each app logging in to both as the ACL
 * user docker/redis/users.conf and sentinel-users.conf ship for it, the `default` user behind a
 * password (replication and Sentinel use it), and a separate TLS cache Redis. One set serves
 * every test: start-up refusals, the stack's behaviour, then a failover under load.
 */
describe('Redis Sentinel over TLS with least-privilege ACL users', () => {
  const prefix = uniquePrefix('sentinel-tls');
  const apps: AppProcess[] = [];
  let ca: TestCa | undefined;
  let otherCa: TestCa | undefined;
  let set: SentinelSet | undefined;
  let cache: Awaited<ReturnType<typeof startSecureRedis>> | undefined;
  let load: SubmitLoad | undefined;
  let users: Record<string, AclUser>;
  let env: AppEnv;
  let api: AppProcess;
  let worker: AppProcess;

  const asUser = (user: AclUser): AppEnv => ({ REDIS_USERNAME: user.name, REDIS_PASSWORD: user.password });

  beforeAll(async () => {
    ca = TestCa.create('nest-offload test CA');
    otherCa = TestCa.create('another CA');
    users = shippedUsers('docker/redis/users.conf', prefix);
    const sentinelUsers = shippedUsers('docker/redis/sentinel-users.conf', prefix);
    const tls = ca.issue('redis');
    [set, cache] = await startAll([
      SentinelSet.start({ tls, users: [users.api.rules, users.worker.rules], sentinelUsers: [sentinelUsers.api.rules, sentinelUsers.worker.rules] }),
      startSecureRedis(tls, [users.cache]),
    ] as const);
    env = stackEnv('sentinel-tls', {
      REDIS_URL: undefined,
      REDIS_PREFIX: prefix,
      REDIS_SENTINELS: set.sentinelsEnv,
      REDIS_SENTINEL_NAME: set.name,
      REDIS_TLS: 'true',
      REDIS_TLS_CA_FILE: ca.file,
      CACHE_REDIS_URL: `rediss://${users.cache.name}:${users.cache.password}@127.0.0.1:${cache.node.port}`,
      CACHE_MEMORY_MB: '0',
      REDIS_MIN_REPLICAS_ACK: '1',
      WORKER_THREADS: '1',
      // why: a job whose pickup or completion the failover lost is re-run once its lock lapses.
      JOB_LOCK_MS: '5000',
    });
    [api, worker] = await startAll([
      startApp('api', { ...env, ...asUser(users.api) }, { timeoutMs: 40_000 }),
      startApp('worker', { ...env, ...asUser(users.worker) }, { timeoutMs: 40_000 }),
    ] as const);
    apps.push(api, worker);
  });

  afterAll(async () => {
    await load?.stop();
    await Promise.all(apps.map((app) => app.stop()));
    await Promise.all([set?.stop(), cache?.stop()]);
    ca?.remove();
    otherCa?.remove();
  });

  it('stops both apps at start-up for a wrong password or a certificate from another CA, naming the variable', async () => {
    const runs = [
      ['api', { ...env, ...asUser(users.api), REDIS_PASSWORD: 'not-the-password' }],
      ['worker', { ...env, ...asUser(users.worker), REDIS_PASSWORD: 'not-the-password' }],
      ['api', { ...env, ...asUser(users.api), REDIS_TLS_CA_FILE: otherCa!.file }],
      ['worker', { ...env, ...asUser(users.worker), REDIS_TLS_CA_FILE: otherCa!.file }],
    ] as const;
    const started = await startAll(runs.map(([kind, runEnv]) => startApp(kind, runEnv, { waitFor: 'none' })));
    apps.push(...started);
    expect(await Promise.all(started.map((app) => app.exited))).toEqual([1, 1, 1, 1]);
    const stderr = started.map((app) => app.stderr.join(''));
    const sentinel = `127\\.0\\.0\\.1:(${set!.sentinels.map((s) => s.port).join('|')}) \\(from REDIS_SENTINELS\\)`;
    const wrongPassword = new RegExp(`REDIS_PASSWORD: ${sentinel} refused the credentials REDIS_USERNAME/REDIS_PASSWORD give \\(user "nest-offload-(api|worker)"\\): WRONGPASS`);
    const otherCaCert = new RegExp(`REDIS_TLS_CA_FILE: the certificate of ${sentinel} is signed by no CA in REDIS_TLS_CA_FILE`);
    expect(stderr).toEqual([expect.stringMatching(wrongPassword), expect.stringMatching(wrongPassword), expect.stringMatching(otherCaCert), expect.stringMatching(otherCaCert)]);
    for (const text of stderr) expect(text).not.toContain('not-the-password');
  });

  it('runs, streams, cancels and caches jobs through the Sentinels over TLS', async () => {
    await expectStackWorks(api, { queue: await set!.primary(), cache: cache!.node, prefix });
  });

  it('loses no job it accepted (REDIS_MIN_REPLICAS_ACK=1) when the primary is killed, and works on the promoted replica', async () => {
    const ledger = new Ledger('Sentinel over TLS, primary killed, REDIS_MIN_REPLICAS_ACK=1');
    load = new SubmitLoad([{ name: 'api', api, ledger }], { lanes: 3, pauseMs: 15, fanOutEvery: 10 });
    load.start();
    await load.acceptedInPhase(60);
    const old = await set!.primary();
    const killedAt = Date.now();
    load.phase = 'failover';
    await old.kill('SIGKILL');
    const promoted = await set!.failedOver(old);
    load.phase = 'after';
    await Promise.all([api.ready(30_000), worker.ready(30_000)]);
    const readyMs = Date.now() - killedAt;
    await load.acceptedInPhase(60);
    await load.stop();

    const summary = await ledger.check(api.url, [worker], { timeoutMs: 45_000 });
    ledger.print(summary, { acceptedByPhase: load.acceptedByPhase('api'), refusedByCode: load.refusals('api'), allReadyAfterKillMs: readyMs });
    expect(load.accepted('api', 'before')).toBeGreaterThan(0);
    expect(load.accepted('api', 'after')).toBeGreaterThan(0);
    expectOnly503s(load.attempts);
    expect(summary.problems).toEqual([]);
    expect(summary.lost).toBe(0);
    await expectStackWorks(api, { queue: promoted, cache: cache!.node, prefix });
  });

  it('was denied no command, key or channel on the data nodes, the Sentinels or the cache Redis', async () => {
    const nodes = [...set!.data.filter((n) => n.running), ...set!.sentinels, cache!.node];
    const denials = await Promise.all(nodes.map(aclDenials));
    expect(denials.flat()).toEqual([]);
  });
});
