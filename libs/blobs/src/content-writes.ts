import { createHash } from 'node:crypto';
import { Readable, Transform } from 'node:stream';
import type { BlobStore } from './blob-store';
import { blobKeyOf, stagingKeyOf } from './file-refs';

/**
 * Stores `body` under its content address (see blobKeyOf): the SHA-256 and size it had. Bytes in
 * memory are hashed first and written only when the store lacks them; a stream is hashed while it
 * is written to a staging object, which then takes the address (see promote). Either way a content
 * is stored once, however many jobs or attempts write it.
 */
export async function writeByContent(store: BlobStore, body: Uint8Array | Readable, contentType?: string): Promise<{ sha256: string; bytes: number }> {
  if (body instanceof Uint8Array) {
    const sha256 = createHash('sha256').update(body).digest('hex');
    const key = blobKeyOf(sha256);
    if (!(await store.stat(key))) await store.write(key, body, { contentType });
    return { sha256, bytes: body.length };
  }
  const hash = createHash('sha256');
  let bytes = 0;
  const meter = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      bytes += chunk.length;
      hash.update(chunk);
      done(null, chunk);
    },
  });
  body.on('error', (error) => meter.destroy(error));
  const staging = stagingKeyOf();
  await store.write(staging, body.pipe(meter), { contentType });
  const sha256 = hash.digest('hex');
  await promote(store, staging, sha256);
  return { sha256, bytes };
}

/** Moves a staged object to the address of its content, or drops it when that content is stored already. */
export async function promote(store: BlobStore, staging: string, sha256: string): Promise<void> {
  const key = blobKeyOf(sha256);
  if (await store.stat(key)) await store.delete([staging]);
  else await store.move(staging, key);
}
