import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BlobStore, FileBlobStore } from '@app/blobs';
import type { Config } from '@app/config';
import type { Logger } from '@app/logging';
import { sweepUploads, uploadExpiry, uploadObjectKey, Uploads } from './uploads';

const HOUR = 3600 * 1000;
const idExpiring = (ms: number) => `${Math.ceil(ms / 1000).toString(36)}-${'ab'.repeat(16)}`;

describe('uploads', () => {
  let dir: string;
  let store: BlobStore;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'uploads-'));
    store = new FileBlobStore(dir);
  });
  afterEach(() => {
    store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('reads an upload’s expiry from its id, and nothing from another name', () => {
    expect(uploadExpiry(idExpiring(1_800_000_000_000))).toBe(1_800_000_000_000);
    for (const id of ['', 'x', 'abc-12', '../etc-passwd', `${idExpiring(0)}x`]) expect(uploadExpiry(id)).toBeUndefined();
  });

  it('sweeps the objects of uploads expired past the grace, and of names no upload has; keeps the rest', async () => {
    const now = Date.now();
    const ids = { fresh: idExpiring(now + HOUR), justExpired: idExpiring(now - 60_000), expired: idExpiring(now - HOUR) };
    for (const id of Object.values(ids)) await store.write(uploadObjectKey(id), Buffer.from(id));
    await store.write('uploads/not-an-upload', Buffer.from('x'));
    await store.write('sha256/ab/kept', Buffer.from('x'));
    expect(await sweepUploads(store, now)).toBe(2);
    const left: string[] = [];
    for await (const key of store.list()) left.push(key);
    expect(left.sort()).toEqual(['sha256/ab/kept', uploadObjectKey(ids.fresh), uploadObjectKey(ids.justExpired)].sort());
  });

  /** `store`, its listing held at its first key until `release` is called. */
  const heldListing = (inner: BlobStore) => {
    let release = (): void => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const listings: number[] = [];
    async function* list(prefix?: string) {
      listings.push(Date.now());
      for await (const key of inner.list(prefix)) {
        await gate;
        yield key;
      }
    }
    const store = new Proxy(inner, {
      get: (target, prop: keyof BlobStore) => (prop === 'list' ? list : typeof target[prop] === 'function' ? (target[prop] as () => unknown).bind(target) : target[prop]),
    });
    return { store, listings, release };
  };

  it('stops a sweep whose signal aborted mid-listing, deleting nothing', async () => {
    const expired = [idExpiring(Date.now() - HOUR), idExpiring(Date.now() - 2 * HOUR)];
    for (const id of expired) await store.write(uploadObjectKey(id), Buffer.from(id));
    const { store: held, release } = heldListing(store);
    const stop = new AbortController();
    const sweeping = sweepUploads(held, Date.now(), stop.signal);
    await new Promise((resolve) => setTimeout(resolve, 50));
    stop.abort();
    release();
    expect(await sweeping).toBe(0);
    const left: string[] = [];
    for await (const key of store.list()) left.push(key);
    expect(left.sort()).toEqual(expired.map(uploadObjectKey).sort());
  });

  it('skips a tick while a sweep runs, and stops and awaits it at shutdown', async () => {
    const expired = uploadObjectKey(idExpiring(Date.now() - HOUR));
    await store.write(expired, Buffer.from('x'));
    const { store: held, listings, release } = heldListing(store);
    const warn = jest.fn();
    const uploads = new Uploads(held, null as never, { uploadTtlSeconds: 3600 } as Config, { warn } as unknown as Logger, null as never, null as never, null as never);
    jest.useFakeTimers({ doNotFake: ['nextTick', 'queueMicrotask', 'setImmediate', 'Date'] });
    try {
      uploads.onModuleInit();
      jest.advanceTimersToNextTimer();
      jest.advanceTimersToNextTimer();
      expect(listings).toHaveLength(1);
      let stopped = false;
      const shutdown = uploads.onApplicationShutdown().then(() => (stopped = true));
      await new Promise((resolve) => setImmediate(resolve));
      expect(stopped).toBe(false);
      release();
      await shutdown;
      expect(listings).toHaveLength(1);
      expect(warn).not.toHaveBeenCalled();
      // The sweep stopped before its delete: the expired upload is the next sweep's.
      const left: string[] = [];
      for await (const key of store.list()) left.push(key);
      expect(left).toEqual([expired]);
    } finally {
      jest.useRealTimers();
    }
  });
});
