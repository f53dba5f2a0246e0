import { randomUUID } from 'node:crypto';
import { createReadStream, type Stats } from 'node:fs';
import { access, constants, mkdir, opendir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { type BlobInfo, type BlobRead, type BlobStore, BlobStoreError, checkKey, type WriteOptions } from './blob-store';
import { FileSink } from './file-sink';

/** Where writes in progress are, beside the objects (one file system, so the final rename is atomic). */
const PARTIAL = '.partial';

/**
 * Bytes a read of an object takes at once. why not fs's 64 KB: each read is a task for a libuv thread
 * and back, as each write is (see FileSink): 0.57–0.73 ms of CPU a MB read in 64 KB against 0.16–0.55
 * in 512 KB (in process, 200 MB).
 */
const READ_BYTES = 512 * 1024;

const infoOf = (s: Stats): BlobInfo => ({ bytes: s.size, etag: `"${s.size.toString(16)}-${Math.trunc(s.mtimeMs).toString(16)}"` });
const missing = (error: unknown) => (error as NodeJS.ErrnoException)?.code === 'ENOENT';

/**
 * A directory as a blob store: one file per key. For `npm start`, the tests, and a ReadWriteMany
 * volume that every replica mounts. A pool thread opens its input files by path (localPath): no
 * byte of them passes through the worker's event loop.
 */
export class FileBlobStore implements BlobStore {
  readonly name: string;

  constructor(private readonly dir: string) {
    this.name = pathToFileURL(dir).href;
  }

  async write(key: string, body: Readable | Uint8Array, options: WriteOptions = {}): Promise<BlobInfo> {
    const path = this.path(key);
    const partial = join(this.dir, PARTIAL, randomUUID());
    try {
      await mkdir(dirname(partial), { recursive: true });
      if (body instanceof Uint8Array) await writeFile(partial, body, { signal: options.signal });
      else await pipeline(body, new FileSink(partial), { signal: options.signal });
      await mkdir(dirname(path), { recursive: true });
      await rename(partial, path);
      return infoOf(await stat(path));
    } catch (error) {
      await rm(partial, { force: true }).catch(() => undefined);
      if (options.signal?.aborted) throw options.signal.reason;
      throw this.failed('write', error);
    }
  }

  async read(key: string, range?: { start: number; end?: number }): Promise<BlobRead | undefined> {
    const path = this.path(key);
    try {
      const info = infoOf(await stat(path));
      if (!range) return { ...info, body: createReadStream(path, { highWaterMark: READ_BYTES }) };
      const end = Math.min(range.end ?? info.bytes - 1, info.bytes - 1);
      return { ...info, body: createReadStream(path, { start: range.start, end, highWaterMark: READ_BYTES }), range: { start: range.start, end } };
    } catch (error) {
      if (missing(error)) return undefined;
      throw this.failed('read', error);
    }
  }

  async stat(key: string): Promise<BlobInfo | undefined> {
    try {
      return infoOf(await stat(this.path(key)));
    } catch (error) {
      if (missing(error)) return undefined;
      throw this.failed('stat', error);
    }
  }

  async move(from: string, to: string): Promise<void> {
    const target = this.path(to);
    try {
      await mkdir(dirname(target), { recursive: true });
      await rename(this.path(from), target);
    } catch (error) {
      throw this.failed('move', error);
    }
  }

  async delete(keys: readonly string[], options: { readonly signal?: AbortSignal } = {}): Promise<void> {
    try {
      options.signal?.throwIfAborted();
      await Promise.all(keys.map((key) => rm(this.path(key), { force: true })));
    } catch (error) {
      throw this.failed('delete', error);
    }
  }

  async *list(prefix = ''): AsyncIterable<string> {
    const walk = async function* (dir: string): AsyncIterable<string> {
      let entries;
      try {
        entries = await opendir(dir);
      } catch (error) {
        if (missing(error)) return;
        throw error;
      }
      for await (const entry of entries) {
        const path = join(dir, entry.name);
        if (entry.isDirectory()) yield* walk(path);
        else yield path;
      }
    };
    for await (const path of walk(this.dir)) {
      const key = relative(this.dir, path).split(sep).join('/');
      if (!key.startsWith(`${PARTIAL}/`) && key.startsWith(prefix)) yield key;
    }
  }

  /** Writes in progress (or left by a process that died) started before `before`: what the sweeper removes. */
  async removePartial(before: Date): Promise<number> {
    const dir = join(this.dir, PARTIAL);
    const names = await readdir(dir).catch((error: unknown) => (missing(error) ? [] : Promise.reject(this.failed('list', error))));
    let removed = 0;
    for (const name of names) {
      const started = await stat(join(dir, name)).then((s) => s.birthtimeMs || s.ctimeMs, () => Infinity);
      if (started < before.getTime()) {
        await rm(join(dir, name), { force: true });
        removed++;
      }
    }
    return removed;
  }

  localPath(key: string): string {
    return this.path(key);
  }

  presign(): Promise<undefined> {
    return Promise.resolve(undefined);
  }

  async check(): Promise<void> {
    // The nearest part of the path that exists: a directory we may write in, or the store cannot be made.
    let dir = this.dir;
    for (let found = await stat(dir).catch(() => undefined); !found; found = await stat(dir).catch(() => undefined)) dir = dirname(dir);
    if (!(await stat(dir)).isDirectory()) throw new Error(`${dir} is not a directory`);
    if (dir !== this.dir) return access(dir, constants.W_OK);
    const probe = join(this.dir, `.probe-${randomUUID()}`);
    try {
      await writeFile(probe, 'ok');
      if ((await readFile(probe, 'utf8')) !== 'ok') throw new Error('a probe file read back wrong');
    } finally {
      await rm(probe, { force: true });
    }
  }

  close(): void {}

  private path(key: string): string {
    return join(this.dir, checkKey(key));
  }

  private failed(operation: string, error: unknown): BlobStoreError {
    return new BlobStoreError(this.name, operation, error);
  }
}
