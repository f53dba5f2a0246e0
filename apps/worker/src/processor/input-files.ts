import { Inject, Injectable } from '@nestjs/common';
import { BLOB_STORE, type BlobStore, blobKeyOf, type FileRef } from '@app/blobs';
import type { ThreadFile } from '../pool/thread-protocol';

/**
 * Where a pool thread reads the files a job takes: a path in a file store, a presigned GET URL in
 * S3 (valid for the job's timeout). The main thread signs; it never touches the bytes.
 */
@Injectable()
export class InputFiles {
  constructor(@Inject(BLOB_STORE) private readonly store: BlobStore | null) {}

  async forThread(refs: Readonly<Record<string, FileRef>>, timeoutMs: number): Promise<Record<string, ThreadFile>> {
    const store = this.store;
    if (!store) throw new Error('this worker has no blob store (BLOB_STORE_URL) for the files the job takes');
    const entries = await Promise.all(
      Object.entries(refs).map(async ([name, ref]): Promise<[string, ThreadFile]> => {
        const key = blobKeyOf(ref.sha256);
        const path = store.localPath(key);
        if (path) return [name, { ...ref, path }];
        const url = await store.presign('GET', key, { expiresSeconds: Math.ceil(timeoutMs / 1000) + 60 });
        return [name, { ...ref, url }];
      }),
    );
    return Object.fromEntries(entries);
  }
}
