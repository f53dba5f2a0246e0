/**
 * A stored file as jobs carry it: in job data (the files a job takes), in a result (the files it
 * returned) and in the cache. Only this reference reaches Redis; the bytes stay in the blob store,
 * under blobKeyOf(sha256). One protocol, one module: the API writes these, the worker reads them.
 */
export interface FileRef {
  /** SHA-256 of the content, hex: its address in the store, and part of the job's content key. */
  readonly sha256: string;
  readonly bytes: number;
  /** The type its magic bytes say (see libs/jobs file-types.ts), never a client's header. */
  readonly contentType: string;
}

export const SHA256_HEX = /^[0-9a-f]{64}$/;

/** Where the content of `sha256` is stored. why the two-character folder: no directory of a file store grows past 256 entries per level. */
export function blobKeyOf(sha256: string): string {
  if (!SHA256_HEX.test(sha256)) throw new Error(`not a SHA-256: ${JSON.stringify(sha256)}`);
  return `sha256/${sha256.slice(0, 2)}/${sha256}`;
}

/** Where a file being received is written until its hash is known. */
export function stagingKeyOf(id: string): string {
  return `staging/${id}`;
}

/** The hashes of `files` by name: what a content key covers (see contentKey in libs/jobs). */
export function hashesOf(files: Readonly<Record<string, FileRef>> | undefined): Record<string, string> | undefined {
  return files && Object.fromEntries(Object.entries(files).map(([name, ref]) => [name, ref.sha256]));
}
