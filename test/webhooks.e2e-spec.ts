import { randomBytes } from 'node:crypto';
import { METRIC_PREFIX, METRICS } from '@app/metrics';
import { AppProcess, startApp, stackEnv, uniquePrefix } from './support/apps';
import { ifPresent } from './support/capabilities';
import { getJob, request, submit } from './support/http';
import { waitFor } from './support/wait';
import { WebhookReceiver } from './support/webhook-receiver';

const FAIL_FIRST = 2;

/**
 * Signed callbacks on completion, with real processes: the API that took the submissions is killed
 * before any job finishes, the worker running them is killed mid-job, and the receiver answers 500
 * to the first attempts of every message. Every finished job still reaches the receiver, every
 * request it gets verifies with the standardwebhooks package, and hosts outside the allowed list
 * (or allowed names resolving to a private address) are never contacted.
 */
describe('webhooks', () => {
  const secret = `whsec_${randomBytes(32).toString('base64')}`;
  const procs: AppProcess[] = [];
  let receiver: WebhookReceiver; // allowed, answers 500 first
  let outsider: WebhookReceiver; // not in the allowed list
  let rebound: WebhookReceiver; // allowed by name (localhost), which resolves to a loopback address
  let env: ReturnType<typeof stackEnv>;
  const start = async (kind: 'api' | 'worker', appEnv = env) => {
    const app = await startApp(kind, appEnv);
    procs.push(app);
    return app;
  };

  beforeAll(async () => {
    [receiver, outsider, rebound] = await Promise.all([
      WebhookReceiver.start(secret, { failFirst: FAIL_FIRST }),
      WebhookReceiver.start(secret),
      WebhookReceiver.start(secret),
    ]);
    env = stackEnv('webhooks', {
      WEBHOOK_SECRET: secret,
      WEBHOOK_ALLOWED_HOSTS: `127.0.0.1:${receiver.port},localhost:${rebound.port}`,
      WEBHOOK_MAX_ATTEMPTS: '6',
      WEBHOOK_BACKOFF_MS: '200',
      // why: the killed worker's jobs (and a killed API's deliveries) run again once their lock lapses.
      JOB_LOCK_MS: '2000',
      WORKER_THREADS: '2',
    });
  });

  afterAll(async () => {
    await Promise.all(procs.map((p) => p.stop('SIGKILL')));
    await Promise.all([receiver?.stop(), outsider?.stop(), rebound?.stop()]);
  });

  it('delivers every finished job at least once, signed, through a killed API, a killed worker and failing first attempts', async () => {
    const [apiA, apiB] = await Promise.all([start('api'), start('api')]);
    const hook = (path: string) => ({ headers: { 'callback-url': `http://127.0.0.1:${receiver.port}${path}` } });

    // Refused before any work is queued; never contacted.
    const refused = await Promise.all([
      submit(apiA.url, 'chaos', { mode: 'ok' }, { headers: { 'callback-url': `http://127.0.0.1:${outsider.port}/hook` } }),
      submit(apiA.url, 'chaos', { mode: 'ok' }, { headers: { 'callback-url': `http://localhost:${receiver.port}/hook` } }),
      submit(apiA.url, 'chaos', { mode: 'ok' }, { headers: { 'callback-url': `http://user:pw@127.0.0.1:${receiver.port}/hook` } }),
      submit(apiA.url, 'chaos', { mode: 'ok' }, { headers: { 'callback-url': 'file:///etc/passwd' } }),
    ]);
    for (const r of refused) {
      expect(r.status).toBe(400);
      expect(r.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(r.body.code).toBe('INVALID_CALLBACK_URL');
    }
    expect(refused[0].body.detail).toBe(`Callback-Url refused: 127.0.0.1:${outsider.port} is not in WEBHOOK_ALLOWED_HOSTS`);

    // Queued with no worker running: long jobs (to kill a worker under), a failing one, one to cancel while queued.
    const spins = await Promise.all(Array.from({ length: 6 }, (_, i) => submit(apiA.url, 'chaos', { mode: 'sleep', ms: 1500, tag: `spin-${i}` }, hook('/a'))));
    const failing = await submit(apiA.url, 'chaos', { mode: 'throw' }, hook('/a'));
    const doomed = await submit(apiA.url, 'chaos', { mode: 'sleep', ms: 100, tag: 'doomed' }, hook('/a'));
    // Single flight: a second submission of the same input joins the job and gets a callback of its own.
    const joinedA = await submit(apiA.url, 'chaos', { mode: 'sleep', ms: 1500, tag: 'joined' }, hook('/a'));
    const joinedB = await submit(apiB.url, 'chaos', { mode: 'sleep', ms: 1500, tag: 'joined' }, hook('/b'));
    // Allowed by name, but the name resolves to a loopback address: accepted, and refused at delivery.
    const viaName = await submit(apiA.url, 'chaos', { mode: 'ok', tag: 'rebound' }, { headers: { 'callback-url': `http://localhost:${rebound.port}/x` } });
    const accepted = [...spins, failing, doomed, joinedA, joinedB, viaName];
    expect(accepted.map((r) => r.status)).toEqual(accepted.map(() => 202));
    expect(joinedB.body.id).toBe(joinedA.body.id);
    expect((await request(`${apiB.url}/v1/jobs/${doomed.body.id}`, { method: 'DELETE' })).body.status).toBe('cancelled');

    // The API that registered the callbacks dies before any job finishes: the other one delivers them.
    await apiA.stop('SIGKILL');

    const first = await start('worker');
    await waitFor(() => first.logs.filter((l) => l.msg === 'job started' && l.type === 'chaos').length >= 2, { timeoutMs: 20_000, what: 'jobs running on the first worker' });
    const killedMidJob = first.logs.filter((l) => l.msg === 'job started').map((l) => String(l.jobId));
    first.signal('SIGKILL');
    await first.exited;
    await start('worker');

    const expected = [
      ...[...spins, failing, doomed, joinedA].map((r) => ({ id: r.body.id as string, path: '/a' })),
      { id: joinedB.body.id as string, path: '/b' },
    ];
    const acked = (id: string, path: string) => receiver.accepted().find((r) => r.path === path && r.event?.data.id === id);
    await waitFor(() => expected.every(({ id, path }) => acked(id, path)), { timeoutMs: 90_000, intervalMs: 200, what: 'a callback for every finished job' });

    // Every request verified; each message was refused twice, then accepted, under one webhook-id.
    expect(receiver.received.filter((r) => !r.event)).toEqual([]);
    const lags: number[] = [];
    for (const { id, path } of expected) {
      const event = acked(id, path)!;
      const attempts = receiver.received.filter((r) => r.headers['webhook-id'] === event.headers['webhook-id']);
      lags.push(attempts[0].at - Date.parse(event.event!.data.finishedAt));
      expect(attempts.map((r) => r.status).slice(0, FAIL_FIRST + 1)).toEqual([500, 500, 204]);
      expect(new Set(attempts.map((r) => r.path))).toEqual(new Set([path]));
      // The final view, as the API serves it.
      const view = (await getJob(apiB.url, id)).body;
      expect(event.event!.data).toEqual(view);
      expect(event.event!.type).toBe(`job.${view.status}`);
    }
    const statusOf = (id: string) => acked(id, '/a')!.event!.data;
    expect(spins.map((r) => statusOf(r.body.id).status)).toEqual(spins.map(() => 'completed'));
    expect(statusOf(failing.body.id)).toMatchObject({ status: 'failed', error: { code: 'JOB_FAILED' } });
    expect(statusOf(doomed.body.id)).toMatchObject({ status: 'cancelled', error: { code: 'JOB_CANCELLED' } });
    // The joined job's two callbacks: one per URL, with distinct ids.
    expect(acked(joinedA.body.id, '/a')!.headers['webhook-id']).not.toBe(acked(joinedA.body.id, '/b')!.headers['webhook-id']);
    // A job the killed worker was running completed on the second worker and was delivered too.
    expect(killedMidJob.some((id) => acked(id, '/a')?.event?.data.status === 'completed')).toBe(true);

    // Never contacted: the host outside the list, and the allowed name that resolved to loopback.
    await waitFor(async () => (await apiB.metric(`${METRIC_PREFIX}webhook_deliveries_total`, { outcome: 'refused' })) === 1, { what: 'the refused delivery' });
    expect(outsider.received).toEqual([]);
    expect(rebound.received).toEqual([]);
    expect(apiB.logs.find((l) => l.msg === 'webhook delivery gave up' && l.jobId === viaName.body.id)).toMatchObject({ outcome: 'refused', detail: expect.stringMatching(/not a public address/) });

    const metric = (name: string, outcome: string) => apiB.metric(`${METRIC_PREFIX}${name}`, { outcome });
    lags.sort((a, b) => a - b);
    console.log(
      `[webhooks] ${expected.length} callbacks for ${expected.length - 1} jobs (1 joined by 2 URLs) through a killed API and a killed worker: ` +
        `${receiver.received.length} requests, all signatures valid, ${receiver.accepted().length} accepted; API B: ` +
        `${await metric('webhook_attempts_total', 'http_5xx')} http_5xx attempts, ${await metric('webhook_deliveries_total', 'delivered')} delivered, ` +
        `${await metric('webhook_deliveries_total', 'refused')} refused; outsider and rebound receivers: 0 requests; ` +
        `first attempt after the job finished: median ${lags[lags.length >> 1]} ms, max ${lags.at(-1)} ms`,
    );
    expect(await metric('webhook_attempts_total', 'http_5xx')).toBeGreaterThanOrEqual(FAIL_FIRST);
  }, 150_000);

  it('sends a callback for a submission answered from the cache: the view of the job that produced it', async () => {
    const api = procs.find((p) => p.kind === 'api' && p.alive)!;
    const done = await submit(api.url, 'fibonacci', { n: 20 }, { wait: 10 });
    expect(done.body.status).toBe('completed');
    const hit = await submit(api.url, 'fibonacci', { n: 20 }, { headers: { 'callback-url': `http://127.0.0.1:${receiver.port}/cached` } });
    expect(hit.status).toBe(200);
    expect(hit.body.cached).toBe(true);
    const event = await waitFor(() => receiver.accepted().find((r) => r.path === '/cached'), { timeoutMs: 20_000, what: 'the cached result\'s callback' });
    expect(event.event).toMatchObject({ type: 'job.completed', data: { id: done.body.id, status: 'completed', result: 6765 } });
  });

  ifPresent('batch').it('gives a batch one callback per distinct job (none for an invalid item), and refuses a disallowed Callback-Url with nothing queued', async () => {
    // A stack of its own, whose worker starts only after the refused batch: anything that batch had
    // queued would still be waiting, and every delivery of this prefix goes through this one API.
    const own = { ...env, REDIS_PREFIX: uniquePrefix('webhooks-batch') };
    const api = await start('api', own);
    const postBatch = (items: unknown[], url: string, headers: Record<string, string> = {}) =>
      request(`${api.url}/v1/jobs/fibonacci/batch`, { method: 'POST', json: { items }, headers: { 'callback-url': url, ...headers } });
    // A duplicate (item 1 of item 0), an invalid item, and a result the cache has (item 3).
    const items = [{ n: 25 }, { n: 25 }, { n: -1 }, { n: 24 }, { n: 26 }];

    const refused = await postBatch(items, `http://127.0.0.1:${outsider.port}/batch`);
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({ code: 'INVALID_CALLBACK_URL' });
    expect(await api.metric(METRICS.queueJobs)).toBe(0);

    await start('worker', own);
    const seeded = await submit(api.url, 'fibonacci', { n: 24 }, { wait: 10 });
    expect(seeded.body.status).toBe('completed');
    const batch = await postBatch(items, `http://127.0.0.1:${receiver.port}/batch`);
    expect(batch.status).toBe(202);
    expect(batch.body.items.map((item: { status: number }) => item.status)).toEqual([202, 202, 400, 200, 202]);
    const [a, again, , cached, b] = batch.body.items.map((item: { job?: { id: string } }) => item.job?.id);
    expect(again).toBe(a);
    expect(cached).toBe(seeded.body.id);

    const onBatch = () => receiver.accepted().filter((r) => r.path === '/batch');
    await waitFor(() => onBatch().length >= 3, { timeoutMs: 30_000, intervalMs: 100, what: 'the callbacks of the batch' });
    // Every delivery this API registered is done: three, one per distinct job, each accepted once.
    await waitFor(async () => (await api.metric(`${METRIC_PREFIX}webhook_deliveries_total`)) === 3, { what: 'three finished deliveries' });
    expect(onBatch().map((r) => r.event!.data.id).sort()).toEqual([a, cached, b].sort());
    expect(new Set(onBatch().map((r) => r.headers['webhook-id'])).size).toBe(3);
    expect(receiver.received.filter((r) => r.path === '/batch' && !r.event)).toEqual([]);
    expect(onBatch().find((r) => r.event!.data.id === cached)!.event).toMatchObject({ type: 'job.completed', data: { status: 'completed', result: 46368 } });
    expect(outsider.received).toEqual([]);
  }, 60_000);

  const hook = (path: string, key: string) => ({ headers: { 'idempotency-key': key, 'callback-url': `http://127.0.0.1:${receiver.port}${path}` } });

  ifPresent('idempotency').it('refuses a retry under the same Idempotency-Key with another Callback-Url (422)', async () => {
    const api = procs.find((p) => p.kind === 'api' && p.alive)!;
    const key = `"callback-${randomBytes(4).toString('hex')}"`;
    const first = await submit(api.url, 'fibonacci', { n: 27 }, hook('/first', key));
    expect([200, 202]).toContain(first.status);
    expect((await submit(api.url, 'fibonacci', { n: 27 }, hook('/first', key))).body.id).toBe(first.body.id);
    const other = await submit(api.url, 'fibonacci', { n: 27 }, hook('/second', key));
    expect(other.status).toBe(422);
    expect(other.body).toMatchObject({ code: 'IDEMPOTENCY_KEY_CONFLICT' });
    // The refused retry registered nothing: only the first URL hears of the job.
    await waitFor(() => receiver.accepted().some((r) => r.path === '/first'), { timeoutMs: 20_000, what: 'the callback to /first' });
    expect(receiver.received.filter((r) => r.path === '/second')).toEqual([]);
  });

  ifPresent('idempotency', 'batch').it('refuses a batch retry under the same Idempotency-Key with another Callback-Url (422)', async () => {
    const api = procs.find((p) => p.kind === 'api' && p.alive)!;
    const key = `"callback-batch-${randomBytes(4).toString('hex')}"`;
    const postBatch = (path: string) => request(`${api.url}/v1/jobs/fibonacci/batch`, { method: 'POST', json: { items: [{ n: 28 }] }, ...hook(path, key) });
    expect([200, 202]).toContain((await postBatch('/batch-first')).status);
    const other = await postBatch('/batch-second');
    expect(other.status).toBe(422);
    expect(other.body).toMatchObject({ code: 'IDEMPOTENCY_KEY_CONFLICT' });
    await waitFor(() => receiver.accepted().some((r) => r.path === '/batch-first'), { timeoutMs: 20_000, what: 'the callback to /batch-first' });
    expect(receiver.received.filter((r) => r.path === '/batch-second')).toEqual([]);
  });

  it('refuses Callback-Url with a 400 saying so when webhooks are off', async () => {
    const api = await start('api', stackEnv('webhooks-off'));
    const res = await submit(api.url, 'chaos', { mode: 'ok' }, { headers: { 'callback-url': `http://127.0.0.1:${receiver.port}/off` } });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ code: 'WEBHOOKS_DISABLED', detail: expect.stringMatching(/WEBHOOK_SECRET and WEBHOOK_ALLOWED_HOSTS are not set/) });
  });
});
