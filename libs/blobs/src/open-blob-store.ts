import { randomUUID } from 'node:crypto';
import { text } from 'node:stream/consumers';
import { type BlobTarget, ConfigError } from '@app/config';
import type { BlobStore } from './blob-store';
import { FileBlobStore } from './file-blob-store';
import type { S3BlobStore } from './s3-blob-store';

/** The store BLOB_STORE_URL names. */
export function openBlobStore(target: BlobTarget): BlobStore {
  if (target.kind === 'file') return new FileBlobStore(target.dir);
  // why required here: only a process that uses S3 loads the AWS SDK (a pool thread of a file store never does).
  const { S3BlobStore: Store } = require('./s3-blob-store') as { S3BlobStore: typeof S3BlobStore };
  return new Store(target);
}

/** How long start-up retries a store that does not answer before it gives up. */
export const STORE_WAIT_MS = 10_000;
const RETRY_MS = 500;

/**
 * Checks at start-up that the store is there and writable: writes a small object, reads it back and
 * deletes it. Throws a ConfigError naming BLOB_STORE_URL when it cannot, after retrying for
 * STORE_WAIT_MS (a store that is still starting gets that long).
 */
export async function checkBlobStore(store: BlobStore, waitMs = STORE_WAIT_MS): Promise<void> {
  const key = `health/${randomUUID()}`;
  const deadline = Date.now() + waitMs;
  for (;;) {
    try {
      await store.write(key, Buffer.from('ok'), { contentType: 'text/plain' });
      const read = await store.read(key);
      const back = read && (await text(read.body));
      await store.delete([key]);
      if (back !== 'ok') throw new Error(`a probe object read back as ${JSON.stringify(back)}`);
      return;
    } catch (error) {
      if (Date.now() + RETRY_MS > deadline) {
        const cause = error instanceof Error ? error.message : String(error);
        throw new ConfigError([`BLOB_STORE_URL: the store (${store.name}) is not reachable and writable: ${cause}`]);
      }
      await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
    }
  }
}
