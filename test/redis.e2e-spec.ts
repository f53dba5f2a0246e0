import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import IORedis from 'ioredis';
import { METRICS } from '@app/metrics';
import { ownersKey } from '@app/queue';
import { type AppEnv, type AppProcess, startAll, startApp, stackEnv } from './support/apps';
import { present } from './support/capabilities';
import { getJob, request, submit } from './support/http';
import { RedisMonitor } from './support/redis-monitor';
import { RedisServer } from './support/redis';
import { newNode, type RedisNode } from './support/redis-ha';
import { waitFor } from './support/wait';

/** The lines an app wrote about a promise nobody handled (its log, or Node's own message on stderr). */
const unhandled = (app: AppProcess) => [...app.logs.filter((l) => /unhandled rejection/i.test(l.msg)).map((l) => l.msg), ...app.stderr.filter((t) => /unhandled/i.test(t))];

/**
 * Redis is the one dependency: without it the API says 503 fast, and both apps recover by themselves;
 * a Redis that refuses a command or stops answering midway through a request leaves no promise
 * unhandled. One stack on a primary with one replica of the test's own (with REDIS_MIN_REPLICAS_ACK=1
 * and API keys: owners recorded). (test/chaos has the same under load, with a ledger of every
 * accepted job, and Redis late at start-up.)
 */
describe('when Redis is away, refuses or freezes', () => {
  const keys = { alice: randomBytes(24).toString('hex'), bob: randomBytes(24).toString('hex'), ops: randomBytes(24).toString('hex') };
  const as = (name: keyof typeof keys) => ({ 'x-api-key': keys[name] });
  let primary: RedisServer;
  let replica: RedisNode | undefined;
  let admin: IORedis;
  let api: AppProcess;
  let worker: AppProcess;
  let env: AppEnv;
  const linked = () => waitFor(async () => /slave0:.*state=online/.test(await admin.info('replication')), { what: 'the replica linked' });

  beforeAll(async () => {
    primary = await RedisServer.start({ appendonly: true });
    admin = new IORedis(primary.url, { maxRetriesPerRequest: 1 });
    replica = await newNode('replica', '', (port) => ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--replicaof', '127.0.0.1', String(primary.port)]);
    await replica.start();
    await linked();
    env = stackEnv('redis-faults', { REDIS_URL: primary.url, API_KEYS: `alice=${keys.alice},bob=${keys.bob}`, ADMIN_API_KEYS: `ops=${keys.ops}`, REDIS_MIN_REPLICAS_ACK: '1' });
    // why 60 s: two apps and two Redis servers starting at once on two shared cores.
    [api, worker] = await startAll([startApp('api', env, { timeoutMs: 60_000 }), startApp('worker', env, { timeoutMs: 60_000 })]);
  });
  afterAll(async () => {
    await Promise.all([api?.stop(), worker?.stop()]);
    admin?.disconnect();
    await replica?.kill();
    if (replica) rmSync(replica.dir, { recursive: true, force: true });
    await primary?.stop();
  });

  /** Runs `fn` while Redis refuses `commands` to the apps (NOPERM, as to a user without them). */
  const refusing = async <T>(commands: string[], fn: () => Promise<T>): Promise<T> => {
    await admin.call('ACL', 'SETUSER', 'default', ...commands.map((c) => `-${c}`));
    try {
      return await fn();
    } finally {
      await admin.call('ACL', 'SETUSER', 'default', ...commands.map((c) => `+${c}`));
    }
  };
  /**
   * Running chaos spins: each test's are cancelled after it, whatever became of it. why bob too: a
   * spin bob joined has two owners, and alice's DELETE only withdraws her; the spin would hold a pool
   * thread for its 30 s, and the next test's wait for a thread (28 s of this file's 50 s before).
   */
  const spins = new Set<string>();
  afterEach(async () => {
    const cancel = (id: string, who: keyof typeof keys) => request(`${api.url}/v1/jobs/${id}`, { method: 'DELETE', headers: as(who) }).catch(() => undefined);
    await Promise.all([...spins].map(async (id) => (await cancel(id, 'alice'), await cancel(id, 'bob'))));
    spins.clear();
  });
  const spinning = async (tag: string) => {
    const { body } = await submit(api.url, 'chaos', { mode: 'sleep', ms: 30_000, tag }, { headers: as('alice') });
    spins.add(body.id);
    // why 30 s: the thread a cancelled spin ran on is replaced first, slowly on a loaded host.
    await waitFor(async () => (await getJob(api.url, body.id, as('alice'))).body.status === 'active', { what: `${tag} active`, timeoutMs: 30_000 });
    return body.id as string;
  };

  it("writes a job's owners on the connection whose WAIT confirms the job, a joiner's too", async () => {
    const monitor = await RedisMonitor.start(primary.url);
    const done = await submit(api.url, 'fibonacci', { n: 7 }, { wait: 10, headers: as('alice') });
    const id = await spinning('owners');
    const joined = await submit(api.url, 'chaos', { mode: 'sleep', ms: 30_000, tag: 'owners' }, { headers: as('bob') });
    const commands = (await monitor.stop()).filter((c) => c.connection.startsWith('nest-offload:api'));
    expect(done.body).toMatchObject({ status: 'completed', result: 13 });
    expect(joined.body).toMatchObject({ id, status: 'active' });
    const owners = (job: string) => ownersKey(env.REDIS_PREFIX!, 'default', job);
    for (const [job, who] of [[done.body.id, 'alice'], [id, 'alice'], [id, 'bob']]) {
      const at = commands.findIndex((c) => c.args[0].toLowerCase() === 'sadd' && c.args[1] === owners(job) && c.args[2] === `key:${who}`);
      const written = commands[at];
      // A WAIT after it on the same connection covers it.
      const confirmed = commands.slice(at).some((c) => c.args[0].toLowerCase() === 'wait' && c.connection === written?.connection);
      expect({ job, who, connection: written?.connection, confirmed }).toEqual({ job, who, connection: 'nest-offload:api-submit', confirmed: true });
    }
    // With API keys, a new job is parked in its caller's share (fair share's script) after the add:
    // the same WAIT covers the add and the park. The joiner added nothing, so parked nothing: its
    // park, sent with its add before the add's answer says it joined, names only the id it planned.
    const parks = commands.filter((c) => /^eval(sha)?$/i.test(c.args[0]) && c.args.includes('park'));
    for (const job of [done.body.id, id]) {
      const at = commands.findIndex((c) => parks.includes(c) && c.args.includes(job));
      const confirmed = commands.slice(at).some((c) => c.args[0].toLowerCase() === 'wait' && c.connection === commands[at]?.connection);
      expect({ job, connection: commands[at]?.connection, confirmed }).toEqual({ job, connection: 'nest-offload:api-submit', confirmed: true });
    }
    expect(parks.filter((c) => c.args.includes('bob') && c.args.includes(id))).toEqual([]);
  });

  it('answers 503 to a DELETE whose watch and publish Redis refuses, and lives on', async () => {
    const id = await spinning('refused-cancel');
    const refused = await refusing(['sadd', 'publish'], () => request(`${api.url}/v1/jobs/${id}`, { method: 'DELETE', headers: as('alice') }));
    expect({ status: refused.status, type: refused.headers.get('content-type') }).toEqual({ status: 503, type: expect.stringMatching(/^application\/problem\+json/) });
    expect((await request(`${api.url}/health/live`)).status).toBe(200);
    expect({ alive: api.alive, unhandled: unhandled(api) }).toEqual({ alive: true, unhandled: [] });
    expect((await request(`${api.url}/v1/jobs/${id}`, { method: 'DELETE', headers: as('alice') })).body).toMatchObject({ status: 'cancelled' });
  });

  it('closes every watch a failed submission opened, whichever step failed', async () => {
    const watched = () => api.metric(METRICS.jobsWatched);
    expect(await watched()).toBe(0);
    // Joining a running job: the write after the add (the joiner's owner, the planned id's records) is refused.
    await spinning('joined-refused');
    const joined = await refusing(['del'], () => submit(api.url, 'chaos', { mode: 'sleep', ms: 30_000, tag: 'joined-refused' }, { wait: 5, headers: as('bob') }));
    // The add's own write (the owner and watcher records) is refused.
    const added = await refusing(['sadd'], () => submit(api.url, 'echo', { n: 301 }, { wait: 5, headers: as('alice') }));
    // The WAIT after the add is refused.
    const replicated = await refusing(['wait'], () => submit(api.url, 'echo', { n: 302 }, { wait: 5, headers: as('alice') }));
    expect({ watched: await watched(), statuses: [joined.status, added.status, replicated.status] }).toEqual({ watched: 0, statuses: [503, 503, 503] });
  });

  it('answers every route while Redis is frozen, and leaves no promise unhandled', async () => {
    const done = await submit(api.url, 'fibonacci', { n: 9 }, { wait: 10, headers: as('alice') });
    const id = await spinning('frozen');
    const alice = as('alice');
    const routes: Array<[string, () => Promise<Response>]> = [
      ['POST', () => fetch(`${api.url}/v1/jobs/fibonacci`, { method: 'POST', headers: { ...alice, 'content-type': 'application/json' }, body: '{"n":11}' })],
      ['POST wait', () => fetch(`${api.url}/v1/jobs/fibonacci`, { method: 'POST', headers: { ...alice, 'content-type': 'application/json', prefer: 'wait=5' }, body: '{"n":12}' })],
      ...(present('idempotency')
        ? [['POST Idempotency-Key', () => fetch(`${api.url}/v1/jobs/fibonacci`, { method: 'POST', headers: { ...alice, 'content-type': 'application/json', 'idempotency-key': 'frozen-1' }, body: '{"n":13}' })] as [string, () => Promise<Response>]]
        : []),
      ...(present('batch')
        ? [['POST batch', () => fetch(`${api.url}/v1/jobs/fibonacci/batch`, { method: 'POST', headers: { ...alice, 'content-type': 'application/json', prefer: 'wait=5' }, body: '{"items":[{"n":14},{"n":15}]}' })] as [string, () => Promise<Response>]]
        : []),
      ['GET job', () => fetch(`${api.url}/v1/jobs/${done.body.id}`, { headers: alice })],
      ['GET events', () => fetch(`${api.url}/v1/jobs/${id}/events`, { headers: alice })],
      ['DELETE', () => fetch(`${api.url}/v1/jobs/${id}`, { method: 'DELETE', headers: alice })],
      ['GET job-types', () => fetch(`${api.url}/v1/job-types`, { headers: alice })],
      ...(present('schedules') ? [['GET schedules', () => fetch(`${api.url}/v1/schedules`, { headers: alice })] as [string, () => Promise<Response>]] : []),
      ['GET ready', () => fetch(`${api.url}/health/ready`)],
      ['GET metrics', () => fetch(`${api.url}/metrics`)],
    ];
    primary.signalProcess('SIGSTOP');
    let answers: string[];
    try {
      answers = await Promise.all(
        routes.map(([name, send]) =>
          send().then(
            async (res) => (await res.body?.cancel(), `${name} ${res.status}`),
            (error: Error) => `${name} ${error.message}`,
          ),
        ),
      );
    } finally {
      primary.signalProcess('SIGCONT');
    }
    // Each answered (none hung past the client's patience), with a status it may give with Redis away.
    for (const answer of answers) expect(answer).toMatch(/ (200|202|503)$/);
    await api.ready();
    expect((await getJob(api.url, done.body.id, alice)).body).toMatchObject({ status: 'completed', result: 34 });
    expect({ alive: api.alive, unhandled: unhandled(api) }).toEqual({ alive: true, unhandled: [] });
  });

  it('answers 503 with Retry-After while Redis is away, never hangs, and recovers when Redis returns', async () => {
    const alice = as('alice');
    const before = await submit(api.url, 'fibonacci', { n: 12 }, { wait: 10, headers: alice });
    expect(before.body.status).toBe('completed');

    await primary.stopProcess();
    const t0 = Date.now();
    const down = await submit(api.url, 'fibonacci', { n: 13 }, { headers: alice });
    expect(Date.now() - t0).toBeLessThan(3000);
    expect(down.status).toBe(503);
    expect(down.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(down.headers.get('content-type')).toMatch(/problem\+json/);
    expect((await request(`${api.url}/v1/jobs/${before.body.id}`, { headers: alice })).status).toBe(503);
    if (present('fair-share')) {
      // An admin read: fair share's per-caller view (two keys: engaged) reads Redis per queue.
      const callers = await request(`${api.url}/admin/callers`, { headers: as('ops') });
      expect(callers.status).toBe(503);
      expect(callers.headers.get('content-type')).toMatch(/problem\+json/);
      expect(callers.body).toMatchObject({ code: 'QUEUE_UNAVAILABLE' });
    }
    await waitFor(async () => (await fetch(`${api.url}/health/ready`)).status === 503, { what: 'api not ready' });
    await waitFor(async () => (await fetch(`${worker.url}/health/ready`)).status === 503, { what: 'worker not ready' });
    expect((await fetch(`${api.url}/health/live`)).status).toBe(200);

    await primary.startProcess();
    await Promise.all([api.ready(), worker.ready(), linked()]);
    const after = await submit(api.url, 'fibonacci', { n: 14 }, { wait: 10, headers: alice });
    expect(after.body).toMatchObject({ status: 'completed', result: 377 });
    expect((await request(`${api.url}/v1/jobs/${before.body.id}`, { headers: alice })).body.result).toBe(144);
    expect({ alive: [api.alive, worker.alive], unhandled: [...unhandled(api), ...unhandled(worker)] }).toEqual({ alive: [true, true], unhandled: [] });
  });
});

describe('when the backlog is full', () => {
  it('refuses new work with 503 once MAX_BACKLOG jobs are waiting', async () => {
    const api = await startApp('api', stackEnv('backlog', { MAX_BACKLOG: '3' })); // no worker: jobs pile up
    try {
      for (let n = 1; n <= 3; n++) expect((await submit(api.url, 'fibonacci', { n })).status).toBe(202);
      await new Promise((r) => setTimeout(r, 300)); // the backlog is counted at most every 250 ms
      const full = await submit(api.url, 'fibonacci', { n: 4 });
      expect(full.status).toBe(503);
      expect(full.body.code).toBe('BACKLOG_FULL');
      expect(full.headers.get('retry-after')).toMatch(/^\d+$/);
    } finally {
      await api.stop();
    }
  });
});
