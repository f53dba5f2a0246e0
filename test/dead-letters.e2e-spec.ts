import { randomBytes } from 'node:crypto';
import { Queue } from 'bullmq';
import IORedis from 'ioredis';
import { bullKey, DEAD_LETTER_PAGE, deadLetterClaimsKey, deadLetterKey, deadLettersKey, type JobData, keepDeadLetter, ownersKey, queuePrefix, replayJobId } from '@app/queue';
import { AppProcess, startAll, startApp, stackEnv } from './support/apps';
import { ifPresent } from './support/capabilities';
import { getJob, request, submit } from './support/http';
import { executions } from './support/ledger';
import { waitFor } from './support/wait';

const key = () => randomBytes(32).toString('hex');
const ALICE = key();
const BOB = key();
const CAROL = key();
const ADMIN = key();
const as = (apiKey: string) => ({ 'x-api-key': apiKey });

/**
 * Dead letters (docs/operate.md#dead-letters), the capability in apps/api/src/dead-letters, on one
 * stack: API keys, an admin key, and JOB_RETENTION_SECONDS of 1 s, so BullMQ drops failed jobs long
 * before their dead letters go. The API logs in as an ACL user of its own, so a test can refuse it a
 * command (ACL SETUSER) without touching the other suites that share this Redis.
 */
describe('dead letters: jobs that failed for good, kept, listed and replayed once', () => {
  const env = stackEnv('dead-letters', {
    API_KEYS: `alice=${ALICE},bob=${BOB},carol=${CAROL}`,
    ADMIN_API_KEYS: `ops=${ADMIN}`,
    JOB_RETENTION_SECONDS: '1',
  });
  const run = randomBytes(4).toString('hex');
  const aclUser = `dead-letters-${run}`;
  const aclPassword = key();
  let api: AppProcess;
  let worker: AppProcess;
  let redis: IORedis;
  let queue: Queue<JobData, unknown, string>;

  beforeAll(async () => {
    redis = new IORedis(env.REDIS_URL!, { maxRetriesPerRequest: null });
    queue = new Queue<JobData, unknown, string>('default', { connection: redis, prefix: queuePrefix(env.REDIS_PREFIX!, 'default') });
    await redis.call('ACL', 'SETUSER', aclUser, 'reset', 'on', `>${aclPassword}`, '~*', '&*', '+@all');
    [api, worker] = await startAll([startApp('api', { ...env, REDIS_USERNAME: aclUser, REDIS_PASSWORD: aclPassword }), startApp('worker', env)]);
  });

  afterAll(async () => {
    await Promise.all([api?.stop(), worker?.stop()]);
    await queue?.close();
    await redis?.call('ACL', 'DELUSER', aclUser).catch(() => undefined);
    redis?.disconnect();
  });

  const admin = (path: string, init: { method?: string; json?: unknown; headers?: Record<string, string> } = {}) =>
    request(`${api.url}${path}`, { ...init, headers: init.headers ?? as(ADMIN) });
  /** A chaos job that throws on each of its 2 attempts, submitted by `apiKey`; resolves with its id once it failed for good. */
  const failing = async (tag: string, apiKey: string, headers: Record<string, string> = {}) => {
    const res = await submit(api.url, 'chaos', { mode: 'throw', tag }, { headers: { ...as(apiKey), ...headers }, wait: 20 });
    expect(res.body).toMatchObject({ status: 'failed', attempts: 2, error: { code: 'JOB_FAILED' } });
    return res.body.id as string;
  };
  /** Runs `fn` while the API's ACL user has `rules` too (ACL SETUSER), then gives it every command on every key back. */
  const restricted = async <T>(rules: string[], fn: () => Promise<T>): Promise<T> => {
    await redis.call('ACL', 'SETUSER', aclUser, ...rules);
    try {
      return await fn();
    } finally {
      await redis.call('ACL', 'SETUSER', aclUser, '+@all', 'clearselectors');
    }
  };
  /** The jobs the worker started since `before` (executions of the ledger), with how many times each. */
  const startedSince = (before: ReadonlyMap<string, number>) =>
    [...executions([worker])].flatMap(([id, n]) => (n > (before.get(id) ?? 0) ? [[id, n - (before.get(id) ?? 0)]] : []));
  /** Until BullMQ has dropped job `id` (JOB_RETENTION_SECONDS): it removes old failed jobs as others fail. */
  const dropped = async (id: string) => {
    let n = 0;
    await waitFor(async () => {
      if (!(await queue.getJob(id))) return true;
      await failing(`${run}-nudge-${n++}`, CAROL);
      return false;
    }, { timeoutMs: 20_000, intervalMs: 300, what: `BullMQ dropped failed job ${id}` });
  };

  it('keeps a failed job past JOB_RETENTION_SECONDS with its input, error and attempts; its owners still read it, others get 404; admin keys only', async () => {
    const id = await failing(`${run}-kept`, ALICE, { 'job-tags': 'order:7' });
    await dropped(id);
    const mine = await getJob(api.url, id, as(ALICE));
    expect(mine.status).toBe(200);
    expect(mine.body).toMatchObject({ id, type: 'chaos', status: 'failed', attempts: 2, error: { code: 'JOB_FAILED', message: expect.stringContaining('thrown on purpose') }, finishedAt: expect.any(String) });
    expect(mine.body.replayedAs).toBeUndefined();
    expect((await getJob(api.url, id, as(BOB))).status).toBe(404);

    const listed = await admin(`/admin/dead-letters?type=chaos&code=JOB_FAILED&limit=100`);
    expect(listed.status).toBe(200);
    const item = listed.body.items.find((entry: { id: string }) => entry.id === id);
    expect(item).toMatchObject({ id, type: 'chaos', version: 1, attempts: 2, error: { code: 'JOB_FAILED' }, input: { mode: 'throw', tag: `${run}-kept`, ms: 0, lines: 0 }, callers: ['alice'], tags: { alice: ['order:7'] } });
    expect(new Date(item.failedAt).toISOString()).toBe(item.failedAt);
    // Newest first.
    const times = listed.body.items.map((entry: { failedAt: string }) => Date.parse(entry.failedAt));
    expect(times).toEqual([...times].sort((a, b) => b - a));

    // A browser (the queue dashboard links here) gets the page as a table.
    const page = await fetch(`${api.url}/admin/dead-letters?type=chaos`, { headers: { ...as(ADMIN), accept: 'text/html' } });
    expect([page.status, page.headers.get('content-type')]).toEqual([200, 'text/html; charset=utf-8']);
    const html = await page.text();
    expect(html).toContain(`<code>${id}</code>`);
    expect(html).not.toContain('<script');

    // Admin keys only: a client key is refused, no key is asked for one.
    expect((await admin('/admin/dead-letters', { headers: as(ALICE) })).status).toBe(403);
    expect((await admin('/admin/dead-letters/replay', { method: 'POST', json: {}, headers: as(ALICE) })).status).toBe(403);
    expect((await admin('/admin/dead-letters', { headers: {} })).status).toBe(401);
    for (const query of ['code=NOPE', 'since=yesterday', 'limit=0', 'status=failed', 'type=no-such-type']) {
      expect((await admin(`/admin/dead-letters?${query}`)).body).toMatchObject({ status: 400, code: 'INVALID_QUERY' });
    }
    expect((await admin('/admin/dead-letters/replay', { method: 'POST', json: { limit: 5000 } })).body).toMatchObject({ status: 400, code: 'INVALID_QUERY' });
  }, 60_000);

  it('pages with a cursor that neither repeats nor skips', async () => {
    for (let i = 0; i < 3; i++) await failing(`${run}-page-${i}`, ALICE);
    const all: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { status: number; body: { items: Array<{ id: string }>; next: string | null } } = await admin(`/admin/dead-letters?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.status).toBe(200);
      all.push(...page.body.items.map((item) => item.id));
      cursor = page.body.next;
    } while (cursor);
    expect(new Set(all).size).toBe(all.length);
    expect(all.length).toBe(await redis.zcard(deadLettersKey(env.REDIS_PREFIX!, 'default')));
  }, 60_000);

  it('replays each dead letter once, as a job its owners follow from the old id; a second and a concurrent replay run none; the admin who asked is logged and the replays counted', async () => {
    const shared = `${run}-shared`;
    const old = await failing(shared, ALICE, { 'job-tags': 'retry-me' });
    const others = [await failing(`${run}-r1`, BOB), await failing(`${run}-r2`, ALICE)];
    const until = new Date(Date.now()).toISOString();
    const filter = { type: 'chaos', code: 'JOB_FAILED', until };

    const dry = await admin('/admin/dead-letters/replay', { method: 'POST', json: { ...filter, limit: 1000, dryRun: true } });
    expect(dry.status).toBe(200);
    expect(dry.body).toMatchObject({ dryRun: true, replayed: 0, jobs: [] });
    expect(dry.body.originals).toEqual(expect.arrayContaining([old, ...others]));
    const matched = dry.body.originals.length;
    // A dry run changes nothing.
    expect((await admin('/admin/dead-letters/replay', { method: 'POST', json: { ...filter, limit: 1000, dryRun: true } })).body.originals).toHaveLength(matched);

    // Two replays at once: each dead letter goes to exactly one of them.
    const [a, b] = await Promise.all([1, 2].map(() => admin('/admin/dead-letters/replay', { method: 'POST', json: { ...filter, limit: 1000 } })));
    expect([a.status, b.status]).toEqual([200, 200]);
    const originals = [...a.body.originals, ...b.body.originals];
    expect(originals.sort()).toEqual([...dry.body.originals].sort());
    expect(a.body.replayed + b.body.replayed).toBe(matched);
    const jobs = [...a.body.jobs, ...b.body.jobs];
    expect(new Set(jobs).size).toBe(jobs.length);
    // A second replay of the same filter runs none.
    const again = await admin('/admin/dead-letters/replay', { method: 'POST', json: { ...filter, limit: 1000 } });
    expect(again.body).toMatchObject({ replayed: 0, jobs: [], originals: [] });

    // The old view names the new job; its owner (and only its owner) follows it there, with its tags.
    const view = await getJob(api.url, old, as(ALICE));
    expect(view.body).toMatchObject({ id: old, status: 'failed' });
    const replayedAs = view.body.replayedAs as string;
    expect(jobs).toContain(replayedAs);
    expect(replayedAs).not.toBe(old);
    const followed = await getJob(api.url, replayedAs, as(ALICE));
    expect(followed.status).toBe(200);
    expect(followed.body).toMatchObject({ id: replayedAs, type: 'chaos', tags: ['retry-me'] });
    expect((await getJob(api.url, replayedAs, as(CAROL))).status).toBe(404);
    // Each replay runs (and, still throwing, fails again: a new dead letter after `until`).
    await waitFor(async () => (await getJob(api.url, replayedAs, as(ALICE))).body.status === 'failed', { timeoutMs: 20_000, what: 'the replayed job ran' });

    const audit = api.logs.filter((line) => line.audit === 'dead-letters.replay' && line.dryRun === false);
    expect(audit.map((line) => line.admin)).toEqual(['ops', 'ops', 'ops']);
    expect(audit.reduce((sum, line) => sum + (line.replayed as number), 0)).toBe(matched);
    const metrics = await request(`${api.url}/metrics`);
    expect(metrics.body).toMatch(new RegExp(`^nest_offload_dead_letters_replayed_total\\{type="chaos"\\} ${matched}$`, 'm'));
  }, 90_000);

  it('puts back a dead letter a replay claimed and never submitted (its API died) once the claim lapses; it is then replayed once', async () => {
    const prefix = env.REDIS_PREFIX!;
    const id = await failing(`${run}-lapse`, ALICE);
    // why wait: the worker keeps the dead letter as BullMQ records the failure, beside the answer.
    await waitFor(async () => (await redis.zscore(deadLettersKey(prefix, 'default'), id)) !== null, { what: 'the dead letter kept' });
    const failedAt = Number(await redis.zscore(deadLettersKey(prefix, 'default'), id));
    // The claim a replay makes, with a deadline a second away, as the script leaves it for a replica
    // killed before its submission (nothing else of the replay happens).
    const claimed = (await DEAD_LETTER_PAGE.run(redis as never, deadLettersKey(prefix, 'default'), deadLetterClaimsKey(prefix, 'default'), failedAt, '', failedAt, 1000, '', '', deadLetterKey(prefix, 'default', ''), '1', 1000, Date.now(), 3600, Date.now() + 1000)) as unknown[];
    expect(claimed.slice(2).map((entry) => (entry as string[])[0])).toContain(id);
    const filter = { since: new Date(failedAt).toISOString(), until: new Date(failedAt).toISOString() };
    const listed = async () => (await admin(`/admin/dead-letters?since=${filter.since}&until=${filter.until}`)).body.items.map((item: { id: string }) => item.id) as string[];
    expect(await listed()).not.toContain(id);

    // Not lost: once the claim lapses, a replica's sweep makes it a dead letter again.
    await waitFor(async () => (await listed()).includes(id), { timeoutMs: 20_000, intervalMs: 500, what: 'the lapsed claim put back' });
    expect(api.logs.some((line) => String(line.msg).includes('claimed by a replay that did not finish'))).toBe(true);
    expect(await redis.zscore(deadLetterClaimsKey(prefix, 'default'), id)).toBeNull();
    const replay = await admin('/admin/dead-letters/replay', { method: 'POST', json: { ...filter, type: 'chaos' } });
    expect(replay.body).toMatchObject({ replayed: 1, originals: [id] });
    // Its claim went with the submission: nothing brings it back, and a second replay runs none.
    expect(await redis.zscore(deadLetterClaimsKey(prefix, 'default'), id)).toBeNull();
    expect((await admin('/admin/dead-letters/replay', { method: 'POST', json: { ...filter, type: 'chaos' } })).body).toMatchObject({ replayed: 0, originals: [] });
    // why wait: its replay fails again, a new dead letter the next test's filter must not meet.
    await waitFor(async () => (await getJob(api.url, replay.body.jobs[0], as(ALICE))).body.status === 'failed', { timeoutMs: 20_000, what: 'the replayed job failed again' });
  }, 60_000);

  it('answers a replay whose submission fails mid-way with what it replayed and what it did not; those stay dead letters, and the audit line names both', async () => {
    const prefix = env.REDIS_PREFIX!;
    const since = new Date().toISOString();
    // Two groups: Alice's job of the default queue, and Bob's of the heavy one (written as a worker
    // keeps a dead letter: the test types of that queue do not fail), replayed in that order.
    const first = await failing(`${run}-partial`, ALICE);
    await waitFor(async () => (await redis.zscore(deadLettersKey(prefix, 'default'), first)) !== null, { what: 'the dead letter kept' });
    const second = `${run}-partial-heavy`;
    await redis.sadd(ownersKey(prefix, 'heavy', second), 'key:bob');
    const now = Date.now();
    expect(await keepDeadLetter(redis as never, prefix, { id: second, name: 'spin', queueName: 'heavy', data: { inputJson: '{"ms":0}', version: 1, key: 'k' }, attemptsMade: 1, timestamp: now - 10, finishedOn: now, failedReason: 'JOB_FAILED: on purpose' }, 3600)).toBe(true);
    const filter = { code: 'JOB_FAILED', since, until: new Date(now).toISOString() };
    // A Redis error on the second submission: BullMQ's add increments the queue's id key first.
    const idKey = bullKey(prefix, 'heavy', 'id');
    await redis.set(idKey, 'not-a-number');
    const partial = await admin('/admin/dead-letters/replay', { method: 'POST', json: filter }).finally(() => redis.del(idKey));
    expect(partial.status).toBe(200);
    expect(partial.body).toMatchObject({ replayed: 1, originals: [first], jobs: [expect.any(String)], skipped: [{ id: second, code: 'QUEUE_UNAVAILABLE' }] });
    // why wait: the answer can reach the test before the API's log line is read from its stdout.
    const audit = await waitFor(() => api.logs.find((line) => line.audit === 'dead-letters.replay' && JSON.stringify(line.skipped ?? []).includes(second)), { what: 'the audit line of the partial replay' });
    expect(audit).toMatchObject({ replayed: 1, jobs: [[first, partial.body.jobs[0]]], skipped: [[second, 'QUEUE_UNAVAILABLE']] });
    // The one not replayed is a dead letter still, not a claim, and replays once now.
    expect((await admin('/admin/dead-letters?type=spin')).body.items.map((item: { id: string }) => item.id)).toContain(second);
    expect(await redis.zscore(deadLetterClaimsKey(prefix, 'heavy'), second)).toBeNull();
    const rest = await admin('/admin/dead-letters/replay', { method: 'POST', json: filter });
    expect(rest.body).toMatchObject({ replayed: 1, originals: [second], skipped: [] });
    expect((await getJob(api.url, rest.body.jobs[0], as(BOB))).status).toBe(200);
    expect((await admin('/admin/dead-letters/replay', { method: 'POST', json: filter })).body).toMatchObject({ replayed: 0, originals: [], skipped: [] });
    // why wait: Alice's replay fails again, a new dead letter that could fail in the same millisecond as the next test's.
    await waitFor(async () => (await getJob(api.url, partial.body.jobs[0], as(ALICE))).body.status === 'failed', { timeoutMs: 20_000, what: 'the replayed job failed again' });
  }, 60_000);

  /** A real dead letter of a chaos job that throws, kept; resolves with its id and when it failed. */
  const deadLetter = async (tag: string) => {
    const id = await failing(tag, ALICE);
    const index = deadLettersKey(env.REDIS_PREFIX!, 'default');
    await waitFor(async () => (await redis.zscore(index, id)) !== null, { what: 'the dead letter kept' });
    const failedAt = Number(await redis.zscore(index, id));
    // why: the worker's log lines may come in after the API's answer; the runs counted after this are the replay's.
    await waitFor(async () => executions([worker]).get(id) === 2, { what: "the worker's log of both attempts" });
    return { id, failedAt, filter: { type: 'chaos', since: new Date(failedAt).toISOString(), until: new Date(failedAt).toISOString() } };
  };

  // why fair share: its parking is the write after the add this case makes fail.
  ifPresent('fair-share').it('answers as replayed a dead letter whose submission added its job and then failed, and replays it no more: the job runs once', async () => {
    const prefix = env.REDIS_PREFIX!;
    const { id, failedAt, filter } = await deadLetter(`${run}-added`);
    const job = replayJobId(id, failedAt);
    const before = executions([worker]);
    // Hash fields may be written only in dead letters: BullMQ's add (HMSET in its script) goes
    // through, fair share's parking of the job right after it (an HSET) fails, and with it the
    // submission. Giving up its claim, the replay finds the job under the id derived from the dead
    // letter, and records it instead of making it a dead letter again.
    const first = await restricted(['-hset', `(+hset ~${deadLetterKey(prefix, 'default', '*')})`], () => admin('/admin/dead-letters/replay', { method: 'POST', json: filter }));
    expect(first.body).toMatchObject({ replayed: 1, originals: [id], jobs: [job], skipped: [] });
    expect(api.logs.some((line) => String(line.msg).includes('a replay stopped at a submission that failed'))).toBe(true);
    expect((await getJob(api.url, id, as(ALICE))).body.replayedAs).toBe(job);
    expect((await admin('/admin/dead-letters/replay', { method: 'POST', json: filter })).body).toMatchObject({ replayed: 0, originals: [] });
    // It runs (fair share's heal parks the job whose parking failed), once: one job, its two attempts (it still throws).
    await waitFor(async () => (await getJob(api.url, job, as(ALICE))).body.status === 'failed', { timeoutMs: 20_000, what: 'the replayed job failed again' });
    expect(startedSince(before)).toEqual([[job, 2]]);
  }, 60_000);

  it('records, once its claim lapses, the replay of a dead letter whose job was added and whose record was not written; a second replay runs none, and the job runs once', async () => {
    const prefix = env.REDIS_PREFIX!;
    const claims = deadLetterClaimsKey(prefix, 'default');
    const { id, failedAt, filter } = await deadLetter(`${run}-unrecorded`);
    const job = replayJobId(id, failedAt);
    const before = executions([worker]);
    // Hash fields may be written only in BullMQ's and fair share's keys: the submission goes through
    // whole, the replay's record of it in the dead letter (an HSET) does not, as if Redis failed or the
    // API died between the two.
    const first = await restricted(['-hset', `(+hset ~${bullKey(prefix, 'default', '*')} ~${queuePrefix(prefix, 'default')}:fair:*)`], () =>
      admin('/admin/dead-letters/replay', { method: 'POST', json: filter }),
    );
    expect(first.body).toMatchObject({ replayed: 1, originals: [id], jobs: [expect.any(String)] });
    expect(await redis.hget(deadLetterKey(prefix, 'default', id), 'replayedAs')).toBeNull();
    expect(await redis.zscore(claims, id)).not.toBeNull();

    // The claim lapses (a minute on: brought forward here, not waited for) and a replica's sweep settles it.
    await redis.zadd(claims, 'XX', Date.now(), id);
    await waitFor(async () => (await redis.zscore(claims, id)) === null, { timeoutMs: 20_000, intervalMs: 500, what: 'the lapsed claim swept' });
    // Replayed again: nothing runs. The sweep found the job under the id derived from the dead letter
    // and wrote the record the replay lost, instead of making it a dead letter again.
    expect((await admin('/admin/dead-letters/replay', { method: 'POST', json: filter })).body).toMatchObject({ replayed: 0, originals: [] });
    expect(first.body.jobs).toEqual([job]);
    expect((await getJob(api.url, id, as(ALICE))).body.replayedAs).toBe(job);
    expect(api.logs.some((line) => String(line.msg).includes('submitted by a replay that did not record it'))).toBe(true);
    // It ran once: one job, its two attempts (it still throws).
    await waitFor(async () => (await getJob(api.url, job, as(ALICE))).body.status === 'failed', { timeoutMs: 20_000, what: 'the replayed job failed again' });
    expect(startedSince(before)).toEqual([[job, 2]]);
  }, 60_000);

  it('keeps no cancelled job as a dead letter', async () => {
    const before = await redis.zcard(deadLettersKey(env.REDIS_PREFIX!, 'default'));
    const queued = await submit(api.url, 'chaos', { mode: 'sleep', ms: 5000, tag: `${run}-cancel` }, { headers: as(ALICE) });
    await request(`${api.url}/v1/jobs/${queued.body.id}`, { method: 'DELETE', headers: as(ALICE) });
    await waitFor(async () => (await getJob(api.url, queued.body.id, as(ALICE))).body.status === 'cancelled', { timeoutMs: 15_000, what: 'cancelled' });
    expect(await redis.zcard(deadLettersKey(env.REDIS_PREFIX!, 'default'))).toBe(before);
  }, 30_000);
});
