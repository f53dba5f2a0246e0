import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { SentinelSet } from './support/redis-ha';
import { runEnv } from './support/test-run';
import { freePort } from './support/wait';

const ROOT = join(__dirname, '..');

/** A bad setting stops the process at start-up with a message naming the variable. */
describe('start-up configuration', () => {
  it.each([
    ['api', { PORT: 'eighty' }, 'PORT'],
    ['api', { REDIS_URL: 'http://nope' }, 'REDIS_URL'],
    ['worker', { WORKER_THREADS: '0' }, 'WORKER_THREADS'],
    ['worker', { NODE_ENV: 'production', CHAOS_JOBS: 'true' }, 'CHAOS_JOBS'],
    ['api', { REDIS_URL: 'redis://127.0.0.1:6379', REDIS_SENTINELS: '127.0.0.1:26379', REDIS_SENTINEL_NAME: 'mymaster' }, 'REDIS_URL'],
    ['worker', { REDIS_SENTINELS: '127.0.0.1:26379' }, 'REDIS_SENTINEL_NAME'],
    ['api', { REDIS_CLUSTER_NODES: 'node-a:7000,node-b' }, 'REDIS_CLUSTER_NODES'],
    ['worker', { CACHE_REDIS_URL: 'redis://cache:6379', CACHE_REDIS_CLUSTER_NODES: 'cache-0:7000' }, 'CACHE_REDIS_URL'],
    ['api', { API_KEYS: 'alice=key-a-0123456789abcdef' }, 'API_KEYS'],
    ['api', { ADMIN_API_KEYS: `ops=${'a'.repeat(64)}` }, 'ADMIN_API_KEYS'],
    ['api', { TRUSTED_PROXIES: '10.0.0.0/8,ingress.internal' }, 'TRUSTED_PROXIES'],
    ['api', { TRUST_PROXY_HOPS: '1' }, 'TRUST_PROXY_HOPS'],
    ['api', { NODE_ENV: 'production', API_KEYS: 'web=9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08', QUEUE_DASHBOARD: 'true' }, 'QUEUE_DASHBOARD'],
    ['api', { BLOB_STORE_URL: 's3://AKIA:secret@bucket' }, 'BLOB_STORE_URL'],
    // The start-up check: a store that cannot be written.
    ['worker', { BLOB_STORE_URL: `file://${ROOT}/package.json/blobs` }, 'BLOB_STORE_URL'],
  ])('%s refuses %j', (app, env, name) => {
    const result = spawnSync(process.execPath, [`dist/apps/${app}/src/main.js`], {
      cwd: ROOT,
      env: { PATH: process.env.PATH, ...runEnv(), ...env },
      encoding: 'utf8',
      timeout: 15_000,
    });
    expect(result.status).toBe(1);
    expect(result.stderr).toContain(`${name}: `);
    expect(result.stderr).not.toMatch(/\n\s+at /); // a message for the operator, not a stack trace
  });
});

/** Runs a built app until it exits (or `timeoutMs` passes); resolves with its exit code, stderr and run time. */
function runToExit(app: string, env: Record<string, string>, timeoutMs: number): Promise<{ status: number | null; stderr: string; ms: number }> {
  const t0 = Date.now();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [`dist/apps/${app}/src/main.js`], { cwd: ROOT, env: { PATH: process.env.PATH, ...runEnv(), ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('close', (status) => {
      clearTimeout(timer);
      resolve({ status, stderr, ms: Date.now() - t0 });
    });
  });
}

/**
 * A Sentinel set or cluster seed list that is not what the configuration says stops the app at
 * start-up with a message naming the variable: a seed that answers as something else at once, a
 * list of which nothing answers after SEED_WAIT_MS (10 s).
 */
describe('start-up check of Sentinel and Cluster seeds', () => {
  let sentinels: SentinelSet | undefined;

  afterAll(async () => {
    await sentinels?.stop();
  });

  it('names the variable to fix for each wrong seed list', async () => {
    sentinels = await SentinelSet.start();
    const standalone = new URL(process.env.E2E_REDIS_URL!);
    const plainRedis = `${standalone.hostname}:${standalone.port || 6379}`;
    const [nobody, nobodyElse] = [await freePort(), await freePort()];
    const cases: Array<[string, Record<string, string>, RegExp]> = [
      ['api', { REDIS_CLUSTER_NODES: plainRedis }, /REDIS_CLUSTER_NODES: .* is not a Redis Cluster node/],
      ['worker', { REDIS_SENTINELS: plainRedis, REDIS_SENTINEL_NAME: 'mymaster' }, /REDIS_SENTINELS: .* is not a Sentinel/],
      ['api', { REDIS_SENTINELS: sentinels.sentinelsEnv, REDIS_SENTINEL_NAME: 'no-such-primary', REDIS_PASSWORD: sentinels.password }, /REDIS_SENTINEL_NAME: the Sentinel at .* monitors no primary named "no-such-primary"/],
      ['worker', { REDIS_SENTINELS: sentinels.sentinelsEnv, REDIS_SENTINEL_NAME: sentinels.name, REDIS_PASSWORD: 'not-the-password' }, /REDIS_PASSWORD: .* refused the credentials/],
      ['api', { REDIS_CLUSTER_NODES: `127.0.0.1:${nobody},127.0.0.1:${nobodyElse}` }, /REDIS_CLUSTER_NODES: none of the listed cluster nodes answered within 10 s/],
      ['worker', { CACHE_REDIS_SENTINELS: `127.0.0.1:${nobody}`, CACHE_REDIS_SENTINEL_NAME: 'cache' }, /CACHE_REDIS_SENTINELS: none of the listed Sentinels answered within 10 s/],
    ];
    const results = await Promise.all(cases.map(([app, env]) => runToExit(app, env, 30_000)));
    results.forEach((result, i) => {
      const [app, , message] = cases[i];
      expect({ app, status: result.status, stderr: result.stderr }).toMatchObject({ status: 1, stderr: expect.stringMatching(message) });
      expect(result.stderr).not.toMatch(/\n\s+at /);
      expect(result.stderr).not.toContain('not-the-password');
    });
    console.log(`[start-up check] exit after (ms): ${results.map((r, i) => `${Object.keys(cases[i][1])[0]}… ${r.ms}`).join('; ')}`);
    // A wrong answer stops at once; only silence waits out the 10 s. why relative: six apps starting
    // at once take 5-9 s to load here, so the wrong answers are compared with the silent lists.
    const [answered, silent] = [results.slice(0, 4), results.slice(4)].map((rs) => rs.map((r) => r.ms));
    expect(Math.max(...answered)).toBeLessThan(Math.min(...silent) - 5000);
  }, 60_000);
});
