import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { setTimeout as sleep } from 'node:timers/promises';
import IORedis from 'ioredis';
import { type BlobStore, blobStoreProblem, isBlobStoreError, openBlobStore, openConfiguredBlobStore, stagingKeyOf } from '@app/blobs';
import { blobTargetOf } from '@app/config';
import { BlobLeases, sweepBlobs } from '@app/queue';
import { uniquePrefix } from './support/apps';
import { S3_CREDENTIALS, S3Server } from './support/s3-server';

const HOUR = 3600_000;

const keysOf = async (store: BlobStore, prefix?: string) => {
  const keys: string[] = [];
  for await (const key of store.list(prefix)) keys.push(key);
  return keys.sort();
};

/** A stream of `chunks` that fails after them, as a client that drops mid-upload does. */
const failingAfter = (...chunks: Buffer[]) =>
  new Readable({
    read() {
      const next = chunks.shift();
      if (next) this.push(next);
      else this.destroy(new Error('client went away'));
    },
  });

/** `store` answering every delete only after `ms` (an abort still stops it, as both stores do). */
const slowDeletes = (store: BlobStore, ms: number): BlobStore =>
  wrapped(store, {
    delete: async (keys: readonly string[], options?: { signal?: AbortSignal }) => {
      await sleep(ms, undefined, { signal: options?.signal });
      await store.delete(keys, options);
    },
  });

/** `store` listing one key every `ms`. */
const slowListing = (store: BlobStore, ms: number): BlobStore =>
  wrapped(store, {
    list: async function* (prefix?: string) {
      for await (const key of store.list(prefix)) {
        await sleep(ms);
        yield key;
      }
    },
  });

const wrapped = (store: BlobStore, own: Partial<BlobStore>): BlobStore =>
  new Proxy(store, {
    get: (target, name) => {
      if (name in own) return own[name as keyof BlobStore];
      const value: unknown = Reflect.get(target, name);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });

const until = async (condition: () => Promise<boolean>) => {
  for (const deadline = Date.now() + 10_000; !(await condition()); await sleep(10)) if (Date.now() > deadline) throw new Error('condition not met in 10 s');
};

/**
 * The blob store's contract, run against both stores: a directory, and a bucket of a real
 * S3-compatible server (s3rver, started here) through the AWS SDK. Nothing is mocked.
 */
describe('blob stores', () => {
  let s3: S3Server;
  let dir: string;
  const saved = { ...process.env };
  const stores: Record<'file' | 's3', BlobStore> = {} as Record<'file' | 's3', BlobStore>;

  beforeAll(async () => {
    Object.assign(process.env, S3_CREDENTIALS);
    s3 = await S3Server.start();
    dir = mkdtempSync(join(tmpdir(), 'blobs-'));
    stores.file = openBlobStore(blobTargetOf(`file://${dir}`) as never);
    stores.s3 = openBlobStore(blobTargetOf(s3.url('contract/')) as never);
  });
  afterAll(async () => {
    stores.file?.close();
    stores.s3?.close();
    await s3?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
    process.env = saved;
  });

  describe.each(['file', 's3'] as const)('%s', (kind) => {
    const store = () => stores[kind];
    afterEach(async () => {
      await store().delete(await keysOf(store()));
      expect(await keysOf(store())).toEqual([]);
    });

    it('streams an object in and reads it back whole or by range; a write replaces it', async () => {
      const bytes = randomBytes(300_000);
      const written = await store().write('sha256/ab/abcdef', Readable.from([bytes.subarray(0, 100_000), bytes.subarray(100_000)]), { contentType: 'image/png' });
      expect(written.bytes).toBe(bytes.length);
      expect(await store().stat('sha256/ab/abcdef')).toEqual(written);
      const whole = (await store().read('sha256/ab/abcdef'))!;
      expect(whole.bytes).toBe(bytes.length);
      expect((await buffer(whole.body)).equals(bytes)).toBe(true);
      const part = (await store().read('sha256/ab/abcdef', { start: 10, end: 19 }))!;
      expect([part.bytes, part.range]).toEqual([bytes.length, { start: 10, end: 19 }]);
      expect((await buffer(part.body)).equals(bytes.subarray(10, 20))).toBe(true);
      const tail = (await store().read('sha256/ab/abcdef', { start: bytes.length - 5 }))!;
      expect((await buffer(tail.body)).equals(bytes.subarray(-5))).toBe(true);
      await store().write('sha256/ab/abcdef', Buffer.from('replaced'));
      expect((await buffer((await store().read('sha256/ab/abcdef'))!.body)).toString()).toBe('replaced');
    });

    it('knows no missing object, and deleting one is no error', async () => {
      expect(await store().stat('uploads/nothing')).toBeUndefined();
      expect(await store().read('uploads/nothing')).toBeUndefined();
      await store().delete(['uploads/nothing']);
    });

    it('moves, lists by prefix and deletes', async () => {
      await store().write('uploads/u1', Buffer.from('one'));
      await store().write('uploads/u2', Buffer.from('two'));
      await store().move('uploads/u1', 'sha256/x1');
      expect(await keysOf(store())).toEqual(['sha256/x1', 'uploads/u2']);
      expect(await keysOf(store(), 'uploads/')).toEqual(['uploads/u2']);
      expect((await buffer((await store().read('sha256/x1'))!.body)).toString()).toBe('one');
      await store().delete(['sha256/x1', 'uploads/u2']);
      expect(await keysOf(store())).toEqual([]);
    });

    it('leaves nothing of a write whose source fails or that is aborted', async () => {
      await expect(store().write('uploads/broken', failingAfter(randomBytes(64 * 1024)))).rejects.toThrow();
      const abort = new AbortController();
      const slow = new Readable({ read() {} });
      slow.push(randomBytes(6 * 1024 * 1024)); // more than one S3 part: a multipart upload is under way
      const writing = store().write('uploads/aborted', slow, { signal: abort.signal });
      setTimeout(() => abort.abort(new Error('stalled')), 300);
      await expect(writing).rejects.toThrow('stalled');
      expect(await keysOf(store())).toEqual([]);
      if (kind === 'file') expect(readdirSync(join(dir, '.partial'))).toEqual([]);
    });

    it('writes a stream larger than one S3 part (a multipart upload)', async () => {
      const bytes = randomBytes(11 * 1024 * 1024);
      const chunks = Array.from({ length: 11 }, (_, i) => bytes.subarray(i * 1024 * 1024, (i + 1) * 1024 * 1024));
      expect((await store().write('sha256/big', Readable.from(chunks))).bytes).toBe(bytes.length);
      expect((await buffer((await store().read('sha256/big'))!.body)).equals(bytes)).toBe(true);
    });

    it(kind === 'file' ? 'gives a path to open and no URL' : 'presigns a GET and a PUT that a plain HTTP client can use', async () => {
      if (kind === 'file') {
        expect(store().localPath('sha256/x')).toBe(join(dir, 'sha256/x'));
        expect(await store().presign('GET', 'sha256/x', { expiresSeconds: 60 })).toBeUndefined();
        return;
      }
      expect(store().localPath('sha256/x')).toBeUndefined();
      const put = (await store().presign('PUT', 'uploads/p', { expiresSeconds: 60, contentType: 'image/png' }))!;
      expect((await fetch(put, { method: 'PUT', body: 'png bytes', headers: { 'content-type': 'image/png' } })).status).toBe(200);
      const get = (await store().presign('GET', 'uploads/p', { expiresSeconds: 60, filename: 'thumb ü.png', contentType: 'image/png' }))!;
      const res = await fetch(get);
      expect(await res.text()).toBe('png bytes');
      expect(res.headers.get('content-disposition')).toContain("filename*=UTF-8''thumb%20%C3%BC.png");
    });

    it('deletes an object once its last lease passes, never while one holds it, and what no lease covers after a grace', async () => {
      const redis = new IORedis(process.env.E2E_REDIS_URL!);
      const leases = new BlobLeases(redis, uniquePrefix(`leases-${kind}`));
      const sweep = (now: number, list = false) => sweepBlobs(store(), leases, { now, list, stagedMaxAgeMs: 2 * HOUR, orphanGraceMs: HOUR });
      try {
        const [shared, alone, orphan] = ['a', 'b', 'c'].map((c) => `sha256/${c}${c}/${c.repeat(64)}`);
        for (const key of [shared, alone, orphan]) await store().write(key, Buffer.from(key));
        const now = Date.now();
        // Two users of `shared` (a job's input, then another job's), one of `alone`: a lease is only ever raised.
        expect(await leases.hold([shared, alone], now + HOUR)).toEqual([shared, alone]);
        expect(await leases.hold([shared], now + 3 * HOUR)).toEqual([]);
        expect(await leases.hold([shared], now + 2 * HOUR)).toEqual([]);
        // A staged write older than the upload expiry (2 h here) is abandoned (its writer died); a recent one is not.
        const [oldStaging, newStaging] = [stagingKeyOf(now - 2 * HOUR), stagingKeyOf(now)];
        for (const key of [oldStaging, newStaging]) await store().write(key, Buffer.from('x'));

        expect(await sweep(now + HOUR + 1, true)).toEqual({ deleted: 1, adopted: 1, abandoned: 1 });
        expect(await keysOf(store())).toEqual([orphan, shared, newStaging].sort());
        // The object without a lease got one of the grace: gone after it, as `shared` after its last lease.
        expect(await sweep(now + 2 * HOUR + 2)).toEqual({ deleted: 1, adopted: 0, abandoned: 0 });
        expect(await sweep(now + 3 * HOUR + 1)).toEqual({ deleted: 1, adopted: 0, abandoned: 0 });
        expect(await keysOf(store())).toEqual([newStaging]);
        expect(await leases.counts()).toEqual({ leased: 0, deleting: 0 });
        // A file written again after its object was swept has no lease: its writer checks it is there (holdWritten).
        expect(await leases.holdWritten(store(), [alone], now + HOUR)).toEqual([alone]);
        await store().write(alone, Buffer.from(alone));
        expect(await leases.holdWritten(store(), [alone], now + HOUR)).toEqual([]);
        // A lease taken while a sweep deletes the object waits for the deletion to end: its user then writes it anew.
        const taken = await leases.takeDue(now + HOUR, 10);
        expect(taken.keys).toEqual([alone]);
        let deletedAt = 0;
        const deleting = new Promise((resolve) => setTimeout(resolve, 300)).then(async () => {
          await store().delete([alone]);
          deletedAt = Date.now();
          await leases.settle(taken, true);
        });
        expect(await leases.hold([alone], now + 2 * HOUR)).toEqual([alone]);
        expect(deletedAt).toBeGreaterThan(0);
        await deleting;
      } finally {
        await redis.quit();
      }
    });

    // why: a delete that outlived the deadline a waiting lease counts on removed the object just leased.
    it('never deletes an object after the deadline a waiting lease counts on: a slow delete is aborted half-way, its objects due again', async () => {
      const redis = new IORedis(process.env.E2E_REDIS_URL!);
      const leases = new BlobLeases(redis, uniquePrefix(`slow-delete-${kind}`));
      const key = `sha256/dd/${'d'.repeat(64)}`;
      try {
        await store().write(key, Buffer.from(key));
        const now = Date.now();
        await leases.hold([key], now);
        // A store that takes 3 s to answer a delete, with a 2 s window: past the deadline of the lease waiting below.
        const sweeping = sweepBlobs(slowDeletes(store(), 3000), leases, { now: now + 1, stagedMaxAgeMs: HOUR, orphanGraceMs: HOUR, deleteWindowMs: 2000 });
        await until(async () => (await leases.counts()).deleting === 1);
        const t0 = Date.now();
        expect(await leases.hold([key], now + HOUR)).toEqual([key]);
        const waited = Date.now() - t0;
        await expect(sweeping).rejects.toThrow(); // its delete was aborted: the sweep fails, and the next one retries
        await sleep(3000); // past the end of the slow delete
        expect({ waited: waited < 2000, there: (await store().stat(key)) !== undefined, leases: await leases.counts() }).toEqual({
          waited: true,
          there: true,
          leases: { leased: 1, deleting: 0 },
        });
      } finally {
        await redis.quit();
      }
    });

    // why: a sweep that died between taking objects and forgetting them left them in `deleting` for good.
    it('deletes what a sweep that died had taken once its deadline has passed, and keeps what a lease took since', async () => {
      const redis = new IORedis(process.env.E2E_REDIS_URL!);
      const leases = new BlobLeases(redis, uniquePrefix(`dead-sweep-${kind}`));
      const [gone, kept] = ['e', 'f'].map((c) => `sha256/${c}${c}/${c.repeat(64)}`);
      try {
        for (const key of [gone, kept]) await store().write(key, Buffer.from(key));
        const now = Date.now();
        await leases.hold([gone, kept], now);
        // A sweep takes both with a 200 ms deadline, then dies.
        expect((await leases.takeDue(now + 1, 10, 200)).keys.sort()).toEqual([gone, kept]);
        await sleep(300);
        // Past the deadline a lease waits for nothing.
        const t0 = Date.now();
        expect(await leases.hold([kept], now + HOUR)).toEqual([kept]);
        expect(Date.now() - t0).toBeLessThan(200);
        expect(await sweepBlobs(store(), leases, { now: now + 1, stagedMaxAgeMs: HOUR, orphanGraceMs: HOUR })).toEqual({ deleted: 1, adopted: 0, abandoned: 0 });
        expect(await keysOf(store())).toEqual([kept]);
        expect(await leases.counts()).toEqual({ leased: 1, deleting: 0 });
      } finally {
        await redis.quit();
      }
    });

    // why: the API's shutdown waited for a running sweep, and a listing of a large store takes minutes.
    it('stops a sweep at its signal, mid-listing, with what it did so far', async () => {
      const redis = new IORedis(process.env.E2E_REDIS_URL!);
      const leases = new BlobLeases(redis, uniquePrefix(`stopped-sweep-${kind}`));
      try {
        for (let i = 0; i < 20; i++) await store().write(`sha256/0${i % 10}/${String(i).padStart(64, '0')}`, Buffer.from('x'));
        const stop = new AbortController();
        // A listing of 20 objects that takes 4 s (200 ms an object), stopped after 500 ms.
        const sweeping = sweepBlobs(slowListing(store(), 200), leases, { list: true, signal: stop.signal, stagedMaxAgeMs: HOUR, orphanGraceMs: HOUR });
        setTimeout(() => stop.abort(), 500);
        const t0 = Date.now();
        const report = await sweeping;
        expect({ stoppedWithin: Date.now() - t0 < 1500, adoptedSome: report.adopted > 0 && report.adopted < 20 }).toEqual({ stoppedWithin: true, adoptedSome: true });
        expect(await leases.counts()).toEqual({ leased: report.adopted, deleting: 0 });
      } finally {
        await redis.quit();
      }
    });

    it('passes the start-up check', async () => {
      expect(await blobStoreProblem(store(), 0)).toBeUndefined();
      expect(await keysOf(store())).toEqual([]);
    });

    it('refuses a key the service would never make', async () => {
      for (const key of ['../etc/passwd', '/abs', 'a/../b', '', 'a//b']) await expect(store().write(key, Buffer.from('x'))).rejects.toThrow('not a blob key');
    });
  });

  it('checks a file store whose directory does not exist yet without making it, and refuses one it could not make', async () => {
    const later = join(dir, 'not', 'yet');
    const opened = await openConfiguredBlobStore({ kind: 'file', dir: later }, []);
    expect('store' in opened && opened.store?.name).toBe(`file://${later}`);
    expect(existsSync(join(dir, 'not'))).toBe(false);
    writeFileSync(join(dir, 'a-file'), '');
    expect(await openConfiguredBlobStore({ kind: 'file', dir: join(dir, 'a-file', 'blobs') }, [], 0)).toEqual({
      problem: `BLOB_STORE_URL: the store (file://${dir}/a-file/blobs) is not reachable and writable: ${dir}/a-file is not a directory`,
    });
    rmSync(join(dir, 'a-file'));
  });

  it('without a store, warns naming BLOB_STORE_URL when a registered type takes or returns files, and only then', async () => {
    expect(await openConfiguredBlobStore(undefined, [])).toEqual({ store: null });
    expect(await openConfiguredBlobStore(undefined, ['file-echo'])).toEqual({
      store: null,
      warning: expect.stringContaining('BLOB_STORE_URL is unset (NODE_ENV=production): the job types that take or return files (file-echo) answer 503'),
    });
  });

  it('names BLOB_STORE_URL when the bucket is missing or the store does not answer, and calls a failure a store error', async () => {
    const missing = openBlobStore(blobTargetOf(s3.url().replace(s3.bucket, 'no-such-bucket')) as never);
    expect(await blobStoreProblem(missing, 0)).toMatch(/^BLOB_STORE_URL: the store \(s3:\/\/no-such-bucket\/ at http:\/\/127\.0\.0\.1:\d+\) is not reachable and writable/);
    missing.close();

    await s3.stopServer();
    try {
      const failure = await stores.s3.write('uploads/x', Buffer.from('x')).catch((e: unknown) => e);
      expect(isBlobStoreError(failure)).toBe(true);
      expect(await blobStoreProblem(stores.s3, 0)).toContain('BLOB_STORE_URL: the store');
    } finally {
      await s3.startServer();
    }
  });
});
