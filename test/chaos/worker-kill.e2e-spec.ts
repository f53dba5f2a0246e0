import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import IORedis from 'ioredis';
import { blobKeyOf, type BlobStore, FileBlobStore } from '@app/blobs';
import { METRIC_PREFIX } from '@app/metrics';
import { BlobLeases, queuePrefix, sweepBlobs } from '@app/queue';
import { AppProcess, startApp, stackEnv } from '../support/apps';
import { request } from '../support/http';
import { executions, inParallel, Ledger } from '../support/ledger';
import { waitFor } from '../support/wait';

const keysOf = async (store: BlobStore) => {
  const keys: string[] = [];
  for await (const key of store.list()) keys.push(key);
  return keys.sort();
};
/** Every file under `dir`, writes in progress (`.partial/`) included. */
const filesUnder = (dir: string): string[] => readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).map((e) => join(e.parentPath, e.name));

/**
 * Fault 1: the worker is killed with SIGKILL in the middle of a load. Nothing it held is lost: the
 * jobs it had started become stalled once their lock expires and another worker runs them again.
 */
describe('worker killed mid-load (kill -9)', () => {
  const JOBS = 200;
  const WORKER_THREADS = 2;
  // why: the stalled jobs are re-run only after their lock expires; a short lock keeps the test quick.
  // why a blob store of the test's own: the file cases count what is left in it.
  const blobs = mkdtempSync(join(tmpdir(), 'chaos-kill-blobs-'));
  const env = stackEnv('chaos-kill', { JOB_LOCK_MS: '2000', WORKER_THREADS: String(WORKER_THREADS), BLOB_STORE_URL: `file://${blobs}` });
  const store = new FileBlobStore(blobs);
  const redis = new IORedis(process.env.E2E_REDIS_URL!);
  const queue = new Queue('default', { connection: redis, prefix: queuePrefix(env.REDIS_PREFIX!, 'default') });
  let api: AppProcess | undefined;
  let first: AppProcess | undefined;
  let second: AppProcess | undefined;
  let third: AppProcess | undefined;

  afterAll(async () => {
    await Promise.all([api?.stop(), first?.stop('SIGKILL'), second?.stop('SIGKILL'), third?.stop()]);
    await queue.close();
    redis.disconnect();
    rmSync(blobs, { recursive: true, force: true });
  });

  it('loses no accepted job; only jobs the killed worker held run twice', async () => {
    [api, first] = await Promise.all([startApp('api', env), startApp('worker', env)]);
    const ledger = new Ledger('worker kill -9');
    const run = Date.now().toString(36);
    // 200 distinct jobs of ~20 ms each: several seconds of work for two threads.
    const inputs = Array.from({ length: JOBS }, (_, i) => ({ ms: 20, tag: `kill-${run}-${i}` }));
    await inParallel(inputs, 20, (input) => ledger.submit(api!.url, 'spin', input));
    expect(ledger.entries.size).toBe(JOBS);

    const completedBy = (w: AppProcess) => w.logs.filter((l) => l.msg === 'job completed').length;
    await waitFor(() => completedBy(first!) >= JOBS / 4, { timeoutMs: 30_000, what: 'a quarter of the load done' });
    // Kill it while it runs jobs: at least one started and not yet finished.
    const active = () => executions([first]).size - completedBy(first!);
    await waitFor(() => active() > 0, { intervalMs: 5, what: 'a job in flight' });
    first.signal('SIGKILL');
    await first.exited;
    const doneBeforeKill = completedBy(first);
    const startedOnFirst = new Set(executions([first]).keys());

    second = await startApp('worker', env);
    const summary = await ledger.check(api.url, [first, second], { timeoutMs: 60_000 });
    // The second worker's own count (Prometheus) agrees with its log lines.
    const metricRuns = await second.metric(`${METRIC_PREFIX}job_run_seconds_count`, { type: 'spin' });
    ledger.print(summary, { doneByKilledWorker: doneBeforeKill, doneBySecondWorker: completedBy(second), secondWorkerMetricRuns: metricRuns });
    expect(metricRuns).toBe([...executions([second]).values()].reduce((a, b) => a + b, 0));

    expect(summary.problems).toEqual([]);
    expect(summary.lost).toBe(0);
    expect(summary.completed).toBe(JOBS);
    // At-least-once: duplicates are only jobs the killed worker had started, at most one per thread.
    for (const { id } of summary.duplicated) expect(startedOnFirst.has(id)).toBe(true);
    expect(summary.duplicates).toBeLessThanOrEqual(WORKER_THREADS);
    expect(second.logs.filter((l) => l.level >= 50)).toEqual([]);
  }, 120_000);

  it('a worker killed mid-job on a file: the retry finds its input, and its result is stored once', async () => {
    // file-echo writes its result file (a copy: the same content) and then waits, so the kill lands after that write.
    const png = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), randomBytes(20_000)]);
    const body = new FormData();
    body.set('input', JSON.stringify({ label: 'killed', holdMs: 3000 }));
    body.set('file', new Blob([new Uint8Array(png)], { type: 'image/png' }), 'a.png');
    const submitted = await request(`${api!.url}/v1/jobs/file-echo`, { method: 'POST', body });
    const id = submitted.body.id as string;
    expect([submitted.status, submitted.body.status]).toEqual([202, 'queued']);
    await waitFor(() => executions([second]).has(id), { intervalMs: 5, timeoutMs: 20_000, what: 'the job started' });
    second!.signal('SIGKILL');
    await second!.exited;

    third = await startApp('worker', env);
    const viewOf = async () => (await request(`${api!.url}/v1/jobs/${id}`)).body;
    await waitFor(async () => ['completed', 'failed'].includes((await viewOf()).status), { timeoutMs: 60_000, intervalMs: 200, what: 'the job run again' });
    const view = await viewOf();
    const sha256 = createHash('sha256').update(png).digest('hex');
    expect([view.status, view.result, view.error]).toEqual(['completed', { label: 'killed', bytes: png.length, contentType: 'image/png', sha256 }, undefined]);
    expect(executions([second, third]).get(id)).toBe(2);
    const copy = Buffer.from(await (await fetch(`${api!.url}${view.files[0].url}`)).arrayBuffer());
    expect(copy.equals(png)).toBe(true);
    // One object: the input, and the result both runs wrote (the same content); what the killed run left unfinished goes within the upload expiry.
    expect((await keysOf(store)).filter((key) => key.startsWith('sha256/'))).toEqual([blobKeyOf(sha256)]);
    const leases = new BlobLeases(redis, env.REDIS_PREFIX!);
    const options = { list: true, stagedMaxAgeMs: 3600_000, orphanGraceMs: 3600_000, now: Date.now() + 3600_000 + 1000 };
    expect(await sweepBlobs(store, leases, options)).toMatchObject({ deleted: 0, adopted: 0 });
    expect(filesUnder(blobs).map((path) => path.slice(blobs.length + 1)).sort()).toEqual(await keysOf(store));
  }, 120_000);

  it('the API killed mid-upload: no job, and nothing of the upload outlives its expiry', async () => {
    const jobs = async () => Object.values(await queue.getJobCounts()).reduce((a, b) => a + b, 0);
    const before = { jobs: await jobs(), keys: await keysOf(store) };
    const boundary = 'b0undary';
    const head = `--${boundary}\r\nContent-Disposition: form-data; name="input"\r\n\r\n{"label":"cut"}\r\n--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.png"\r\nContent-Type: image/png\r\n\r\n`;
    const req = httpRequest(`${api!.url}/v1/jobs/file-echo`, { method: 'POST', headers: { 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': String(head.length + 60_000) } });
    req.on('error', () => undefined);
    req.write(head);
    req.write(Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), randomBytes(30_000)]));
    // Killed while the file streams into the store: a write in progress is there.
    await waitFor(() => filesUnder(blobs).some((path) => path.includes('.partial')), { timeoutMs: 10_000, what: 'the upload being written' });
    api!.signal('SIGKILL');
    await api!.exited;
    req.destroy();
    expect(await jobs()).toBe(before.jobs);
    expect(await keysOf(store)).toEqual(before.keys);
    // Past the upload expiry (UPLOAD_TTL_SECONDS, an hour) a sweep removes the unfinished write, and only it.
    const leases = new BlobLeases(redis, env.REDIS_PREFIX!);
    const swept = await sweepBlobs(store, leases, { list: true, stagedMaxAgeMs: 3600_000, orphanGraceMs: 3600_000, now: Date.now() + 3600_000 + 1000 });
    expect(swept).toEqual({ deleted: 0, adopted: 0, abandoned: 1 });
    expect(filesUnder(blobs).map((path) => path.slice(blobs.length + 1)).sort()).toEqual(before.keys);
  }, 60_000);
});
