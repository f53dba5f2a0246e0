import type { Readable } from 'node:stream';

/** Injection token of the process's BlobStore: null in production without BLOB_STORE_URL (no file types then). */
export const BLOB_STORE = Symbol('BLOB_STORE');

/** What a stored object is. */
export interface BlobInfo {
  readonly bytes: number;
  /** A strong validator of its content (the file store's is derived from size and mtime). */
  readonly etag: string;
}

/** An object, or the byte range of it asked for, as a stream. */
export interface BlobRead extends BlobInfo {
  readonly body: Readable;
  /** The range `body` holds (inclusive), when one was asked for. */
  readonly range?: { readonly start: number; readonly end: number };
}

export interface WriteOptions {
  readonly contentType?: string;
  /** Aborting stops the write and removes what was written of it; the write rejects with the reason. */
  readonly signal?: AbortSignal;
}

export interface PresignOptions {
  readonly expiresSeconds: number;
  readonly contentType?: string;
  /** For a GET: the name a browser saves it under (Content-Disposition: attachment). */
  readonly filename?: string;
}

/**
 * Where files live, as every part of the service sees it: the API (uploads, downloads), the worker
 * and its pool threads (inputs, results), the sweeper. Keys are the service's own (see blobKeys):
 * a caller never names one. Implementations: FileBlobStore (a directory) and S3BlobStore.
 */
export interface BlobStore {
  /** The store as a message names it, without credentials (e.g. `s3://bucket/prefix/ at http://minio:9000`). */
  readonly name: string;
  /**
   * Streams `body` into `key`. The object appears whole or not at all: readers never see a part of
   * it, and a failed or aborted write leaves nothing. An existing object under `key` is replaced.
   */
  write(key: string, body: Readable | Uint8Array, options?: WriteOptions): Promise<BlobInfo>;
  /** The object, or `range` of it (clamped to its size); undefined when there is none. */
  read(key: string, range?: { start: number; end?: number }): Promise<BlobRead | undefined>;
  stat(key: string): Promise<BlobInfo | undefined>;
  /** Renames `from` to `to`, replacing `to`: how a staged upload takes its content address. */
  move(from: string, to: string): Promise<void>;
  /**
   * Deletes the objects; a missing one is no error. Aborting `signal` stops it (it rejects with a
   * BlobStoreError): what it had not deleted yet stays, and no request of it is left running here.
   */
  delete(keys: readonly string[], options?: { readonly signal?: AbortSignal }): Promise<void>;
  /** Every key under `prefix` (a key prefix, e.g. `sha256/`), in no particular order. */
  list(prefix?: string): AsyncIterable<string>;
  /** Removes writes left unfinished since before `before` (a process died mid-write); how many. */
  removePartial(before: Date): Promise<number>;
  /** A path a thread on this machine can open, for the file store; undefined for a remote one. */
  localPath(key: string): string | undefined;
  /** A short-lived URL a client can GET (or PUT) directly; undefined when the store has none (the file store). */
  presign(method: 'GET' | 'PUT', key: string, options: PresignOptions): Promise<string | undefined>;
  /**
   * Throws unless the store is there and writable: S3 writes, reads back and deletes a small object;
   * the file store does so in its directory, or, before its first write has made the directory,
   * checks that it may make it (so an app that never writes a file leaves no directory behind).
   */
  check(): Promise<void>;
  close(): void;
}

/**
 * The store failed (unreachable, refused, full). Carries a code, not a class, across a thread
 * boundary; the API answers 503 naming the store.
 */
export class BlobStoreError extends Error {
  readonly code = 'BLOB_STORE_UNAVAILABLE';
  constructor(
    readonly store: string,
    readonly operation: string,
    cause: unknown,
  ) {
    super(`blob store ${store}: ${operation} failed: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = 'BlobStoreError';
  }
}

export const isBlobStoreError = (error: unknown): error is { code: 'BLOB_STORE_UNAVAILABLE'; message: string } =>
  typeof error === 'object' && error !== null && (error as { code?: unknown }).code === 'BLOB_STORE_UNAVAILABLE';

// why so strict: keys become file paths in the file store; no `..`, no leading slash, no oddities.
const KEY = /^[a-z0-9][a-z0-9_-]*(\/[a-z0-9][a-z0-9._-]*)*$/i;

/** Throws on a key the service would never make: a bug, never a caller's doing. */
export function checkKey(key: string): string {
  if (!KEY.test(key) || key.length > 512) throw new Error(`not a blob key: ${JSON.stringify(key)}`);
  return key;
}
