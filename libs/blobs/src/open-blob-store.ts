import type { BlobTarget } from '@app/config';
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
 * The problem with the store, naming BLOB_STORE_URL, unless it is there and writable (see
 * BlobStore.check) within `waitMs` of retries (a store still starting gets that long).
 */
export async function blobStoreProblem(store: BlobStore, waitMs = STORE_WAIT_MS): Promise<string | undefined> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    try {
      await store.check();
      return undefined;
    } catch (error) {
      if (Date.now() + RETRY_MS > deadline) {
        const cause = error instanceof Error ? error.message : String(error);
        return `BLOB_STORE_URL: the store (${store.name}) is not reachable and writable: ${cause}`;
      }
      await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
    }
  }
}

/**
 * An app's store as its start-up opens it, before Nest starts: the configured one, checked, or the
 * problem with it, naming BLOB_STORE_URL, for the app to stop with. Without one (production with
 * BLOB_STORE_URL unset): null, with a warning naming `fileTypes` (the registered types that take or
 * return files) when there are any: their submissions answer 503 naming BLOB_STORE_URL.
 * why start anyway: a service deployed without a store still serves its other types (the shipped
 * manifests run the example `thumbnail` without one). why not a ConfigError: pool threads load
 * this lib, and @app/config's index loads Nest.
 */
export async function openConfiguredBlobStore(
  target: BlobTarget | undefined,
  fileTypes: readonly string[],
  waitMs?: number,
): Promise<{ store: BlobStore | null; warning?: string } | { problem: string }> {
  if (!target) {
    if (fileTypes.length === 0) return { store: null };
    return {
      store: null,
      warning: `BLOB_STORE_URL is unset (NODE_ENV=production): the job types that take or return files (${fileTypes.join(', ')}) answer 503 until it names an s3:// URL, or a file:// directory every replica mounts with BLOB_STORE_ALLOW_FILE=true`,
    };
  }
  const store = openBlobStore(target);
  // why no wait for a directory: one that is missing or read-only does not fix itself; a remote store may still be starting.
  const problem = await blobStoreProblem(store, waitMs ?? (target.kind === 's3' ? STORE_WAIT_MS : 0));
  if (problem === undefined) return { store };
  store.close();
  return { problem };
}
