import { Worker } from 'node:worker_threads';
import { Injectable, type OnApplicationShutdown } from '@nestjs/common';

/**
 * What the thread runs: a SHA-256 per open hash, fed batches of bytes, each batch handed back to be
 * filled again. Messages of one port arrive in order, so a hash's digest comes after its batches.
 */
const THREAD = `
const { parentPort } = require('node:worker_threads');
const { createHash } = require('node:crypto');
const open = new Map();
parentPort.on('message', ({ id, batch, length, end }) => {
  let hash = open.get(id);
  if (batch) {
    if (!hash) open.set(id, (hash = createHash('sha256')));
    hash.update(new Uint8Array(batch, 0, length));
    parentPort.postMessage({ id, batch }, [batch]);
  }
  if (end === 'digest') parentPort.postMessage({ id, digest: (hash ?? createHash('sha256')).digest('hex') });
  if (end) open.delete(id);
});`;

/** Bytes copied into one batch before it goes to the thread: fewer messages, one copy. */
const BATCH_BYTES = 256 * 1024;
/**
 * Batches at the thread before a file waits (backpressure): 4 of one file (1 MiB), 64 of all files
 * (16 MiB). why both: a thread that falls behind (starved of a core) must hold the uploads back,
 * not their bytes, however many run at once. A file being read also fills one batch of its own.
 */
const MAX_PER_FILE = 4;
const MAX_TOTAL = 64;
/** Emptied batches kept for reuse (8 MiB at most). */
const MAX_SPARE = 32;

/** One hashing thread as it runs; a new one replaces it once it is gone, and the hashes it held fail. */
class Thread {
  readonly worker = new Worker(THREAD, { eval: true });
  alive = true;
  readonly hashes = new Map<number, ThreadSha256>();
  /** Batches at the thread, of every hash. */
  outstanding = 0;
  /** Hashes waiting for batches to come back (see ThreadSha256.drained). */
  readonly waiting = new Set<ThreadSha256>();

  constructor(private readonly spare: ArrayBuffer[]) {
    this.worker.unref();
    this.worker.on('message', ({ id, batch, digest }: { id: number; batch?: ArrayBuffer; digest?: string }) => {
      const hash = this.hashes.get(id);
      if (batch) {
        if (this.spare.length < MAX_SPARE) this.spare.push(batch);
        this.outstanding--;
        hash?.returned();
        for (const waiter of this.waiting) waiter.wake();
      }
      if (digest !== undefined) {
        this.hashes.delete(id);
        hash?.digested(digest);
      }
    });
    this.worker.on('error', (error: unknown) => this.lost(error instanceof Error ? error : new Error(String(error))));
    this.worker.on('exit', (code) => this.lost(new Error(`the hashing thread exited with code ${code}`)));
  }

  private lost(error: Error): void {
    if (!this.alive) return;
    this.alive = false;
    for (const hash of this.hashes.values()) hash.failed(error);
    this.hashes.clear();
    this.waiting.clear();
  }
}

/**
 * SHA-256 off the API's event loop: the bytes of an upload are copied into 256 KiB batches that a
 * thread of its own hashes (transferred, not copied again) while the loop goes on reading and
 * writing the file. why: hashing costs ~0.5 ms of CPU per MB (SHA-NI), a quarter of the API's work
 * on an upload and as much as the rest of a request's, on the loop that answers every other request.
 * One thread per API, started with the first upload; if it dies, the uploads it was hashing fail
 * and the next one starts another.
 */
@Injectable()
export class Sha256Thread implements OnApplicationShutdown {
  private thread?: Thread;
  private nextId = 0;
  private readonly spare: ArrayBuffer[] = [];

  /** A new hash, fed with `update` and ended with `digest` (or `drop`). */
  hash(): ThreadSha256 {
    if (!this.thread?.alive) this.thread = new Thread(this.spare);
    const hash = new ThreadSha256(this.thread, ++this.nextId, this.spare);
    this.thread.hashes.set(hash.id, hash);
    return hash;
  }

  async onApplicationShutdown(): Promise<void> {
    const thread = this.thread;
    this.thread = undefined;
    await thread?.worker.terminate();
  }
}

/** One file's SHA-256, hashed on the thread. */
export class ThreadSha256 {
  private batch?: Buffer;
  private filled = 0;
  private outstanding = 0;
  private error?: Error;
  private waiting?: { resolve(): void; reject(error: Error): void };
  private result?: { resolve(digest: string): void; reject(error: Error): void };

  constructor(
    private readonly thread: Thread,
    readonly id: number,
    private readonly spare: ArrayBuffer[],
  ) {}

  /** Adds `chunk` (copied: the caller may reuse it at once). */
  update(chunk: Uint8Array): void {
    if (this.error) return;
    for (let offset = 0; offset < chunk.length; ) {
      this.batch ??= Buffer.from(this.spare.pop() ?? new ArrayBuffer(BATCH_BYTES));
      const n = Math.min(BATCH_BYTES - this.filled, chunk.length - offset);
      this.batch.set(chunk.subarray(offset, offset + n), this.filled);
      this.filled += n;
      offset += n;
      if (this.filled === BATCH_BYTES) this.send();
    }
  }

  /** Whether the thread holds as many batches as it may, of this file or of all: wait for `drained` before more. */
  get backlogged(): boolean {
    return this.outstanding >= MAX_PER_FILE || this.thread.outstanding >= MAX_TOTAL;
  }

  /** Resolves once the thread has handed back enough batches (or rejects if it died). */
  drained(): Promise<void> {
    if (this.error) return Promise.reject(this.error);
    if (!this.backlogged) return Promise.resolve();
    return new Promise((resolve, reject) => {
      this.waiting = { resolve, reject };
      this.thread.waiting.add(this);
    });
  }

  /** The hex digest of every byte given; the hash is closed then. */
  digest(): Promise<string> {
    if (this.error) return Promise.reject(this.error);
    this.send();
    return new Promise((resolve, reject) => {
      this.result = { resolve, reject };
      this.thread.worker.postMessage({ id: this.id, end: 'digest' });
    });
  }

  /** Ends the hash without a digest (a refused or failed file). */
  drop(): void {
    if (this.result || this.error) return;
    this.error = new Error('dropped');
    this.thread.hashes.delete(this.id);
    this.thread.waiting.delete(this);
    if (this.thread.alive) this.thread.worker.postMessage({ id: this.id, end: 'drop' });
  }

  /** Called by the thread: a batch of this hash came back. */
  returned(): void {
    this.outstanding--;
  }

  /** Called by the thread when a batch came back: goes on if this hash waited and may now. */
  wake(): void {
    if (!this.waiting || this.backlogged) return;
    this.waiting.resolve();
    this.waiting = undefined;
    this.thread.waiting.delete(this);
  }

  digested(digest: string): void {
    this.result?.resolve(digest);
  }

  failed(error: Error): void {
    this.error = error;
    this.waiting?.reject(error);
    this.result?.reject(error);
  }

  private send(): void {
    if (!this.batch || this.filled === 0) return;
    const batch = this.batch.buffer as ArrayBuffer;
    this.thread.worker.postMessage({ id: this.id, batch, length: this.filled }, [batch]);
    this.outstanding++;
    this.thread.outstanding++;
    this.batch = undefined;
    this.filled = 0;
  }
}
