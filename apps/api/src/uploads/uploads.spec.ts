import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BlobStore, FileBlobStore } from '@app/blobs';
import { sweepUploads, uploadExpiry, uploadObjectKey } from './uploads';

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
});
