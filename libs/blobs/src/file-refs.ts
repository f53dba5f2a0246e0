import { randomUUID } from 'node:crypto';

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

/**
 * A new key where a file being received is written until its hash is known. why the time in it:
 * a sweep tells an abandoned one (its writer died) by its age without asking the store.
 */
export function stagingKeyOf(now = Date.now()): string {
  return `staging/${now.toString(36)}-${randomUUID()}`;
}

/** The hashes of `files` by name: what a content key covers (see contentKey in libs/jobs). */
export function hashesOf(files: Readonly<Record<string, FileRef>> | undefined): Record<string, string> | undefined {
  return files && Object.fromEntries(Object.entries(files).map(([name, ref]) => [name, ref.sha256]));
}

/** A file a job's run returned (ctx.writeFile): its reference and the name it gave it. */
export interface ResultFile extends FileRef {
  readonly name: string;
}

/** A JSON result larger than this goes to the blob store as a file named RESULT_JSON: Redis keeps only its reference. */
export const LARGE_RESULT_BYTES = 64 * 1024;
export const RESULT_JSON = 'result.json';
/** A name a run may give a result file: what a download saves it as. RESULT_JSON is the service's own. */
export const RESULT_FILE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/**
 * The result of a job that returned files, or whose JSON result went to the store, as BullMQ and the
 * cache keep it: the files' references, and the JSON result unless it is the RESULT_JSON file.
 * why `$files`: one key no output of the shipped types has marks it; any other result is kept as is.
 */
export interface StoredResult {
  readonly $files: readonly ResultFile[];
  readonly result?: unknown;
}

export const isStoredResult = (value: unknown): value is StoredResult =>
  typeof value === 'object' && value !== null && Array.isArray((value as { $files?: unknown }).$files);
