import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import type { Worker } from 'node:worker_threads';
import { z } from 'zod';
import { FileBlobStore } from '@app/blobs';
import { defineJob } from '@app/jobs';
import { stageFile } from './file-meter';
import { Sha256Thread } from './sha256-thread';

const pdf = defineJob({
  name: 'takes-pdf',
  version: 1,
  description: 'Test job: takes one PDF.',
  input: z.strictObject({}),
  output: z.object({}),
  files: { doc: { maxBytes: 4 * 1024 * 1024, accept: ['application/pdf'] } },
  timeoutMs: 1000,
  cacheTtlSeconds: 0,
  run: () => ({}),
});
const BYTES = Buffer.concat([Buffer.from('%PDF-1.7\n'), Buffer.alloc(3 * 1024 * 1024, 7)]);

describe('stageFile', () => {
  let dir: string;
  let store: FileBlobStore;
  let hashes: Sha256Thread;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'file-meter-'));
    store = new FileBlobStore(dir);
    hashes = new Sha256Thread();
  });
  afterEach(async () => {
    await hashes.onApplicationShutdown();
    rmSync(dir, { recursive: true, force: true });
  });
  const keys = async () => {
    const found: string[] = [];
    for await (const key of store.list()) found.push(key);
    return found;
  };

  it('stores the file under the staging key with its SHA-256, size and sniffed type', async () => {
    const staged = await stageFile(store, hashes, pdf, 'doc', Readable.from([BYTES.subarray(0, 5), BYTES.subarray(5)]), new AbortController().signal, () => undefined, 'staging/one');
    expect(staged).toEqual({ name: 'doc', staging: 'staging/one', sha256: createHash('sha256').update(BYTES).digest('hex'), bytes: BYTES.length, contentType: 'application/pdf' });
    expect(await keys()).toEqual(['staging/one']);
  });

  it('leaves nothing stored when the hashing thread dies once the bytes are written', async () => {
    const write = store.write.bind(store);
    store.write = async (...args: Parameters<FileBlobStore['write']>) => {
      const info = await write(...args);
      await (hashes as unknown as { thread: { worker: Worker } }).thread.worker.terminate();
      return info;
    };
    await expect(stageFile(store, hashes, pdf, 'doc', Readable.from([BYTES]), new AbortController().signal, () => undefined, 'staging/two')).rejects.toThrow(/hashing thread exited/);
    expect(await keys()).toEqual([]);
  });
});
