import { type BlobTarget, type Config, ConfigError } from '@app/config';
import type { BlobStore } from './blob-store';
import { FileBlobStore } from './file-blob-store';
import type { S3BlobStore } from './s3-blob-store';

/** The store BLOB_STORE_URL names. */
export function openBlobStore(target: BlobTarget): BlobStore {
  if (target.kind === 'file') return new FileBlobStore(target.dir);
  // why required here: only a process that uses S3 loads the AWS SDK.
  const { S3BlobStore: Store } = require('./s3-blob-store') as { S3BlobStore: typeof S3BlobStore };
  return new Store(target);
}

/** How long start-up retries a store that does not answer before it gives up. */
export const STORE_WAIT_MS = 10_000;
const RETRY_MS = 500;

/**
 * Checks at start-up that the store is there and writable (see BlobStore.check), retrying for
 * `waitMs` (a store still starting gets that long); throws a ConfigError naming BLOB_STORE_URL when
 * it is not.
 */
export async function checkBlobStore(store: BlobStore, waitMs = STORE_WAIT_MS): Promise<void> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    try {
      return await store.check();
    } catch (error) {
      if (Date.now() + RETRY_MS > deadline) {
        const cause = error instanceof Error ? error.message : String(error);
        throw new ConfigError([`BLOB_STORE_URL: the store (${store.name}) is not reachable and writable: ${cause}`]);
      }
      await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
    }
  }
}

/**
 * The start-up check of an app: the configured store is checked; without one (production with
 * BLOB_STORE_URL unset), start-up stops if any of `fileTypes` (the types that take or return files)
 * is registered.
 */
export async function checkConfiguredBlobStore(config: Pick<Config, 'blobStore'>, fileTypes: readonly string[], waitMs?: number): Promise<void> {
  if (!config.blobStore) {
    if (fileTypes.length === 0) return;
    throw new ConfigError([
      `BLOB_STORE_URL: required when NODE_ENV=production, for the job types that take or return files (${fileTypes.join(', ')}): an s3:// URL, or a file:// directory every replica mounts with BLOB_STORE_ALLOW_FILE=true`,
    ]);
  }
  const store = openBlobStore(config.blobStore);
  try {
    // why no wait for a directory: one that is missing or read-only does not fix itself; a remote store may still be starting.
    await checkBlobStore(store, waitMs ?? (config.blobStore.kind === 's3' ? STORE_WAIT_MS : 0));
  } finally {
    store.close();
  }
}
