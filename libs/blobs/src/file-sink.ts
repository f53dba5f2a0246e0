import { type FileHandle, open } from 'node:fs/promises';
import { Writable } from 'node:stream';

/** Bytes gathered before one write: 8 socket reads of 64 KB. */
export const SINK_BATCH_BYTES = 512 * 1024;
/** Emptied batches kept for the next files (8 MiB at most). */
const MAX_SPARE = 16;
const spare: Buffer[] = [];

/**
 * A new file written from a stream SINK_BATCH_BYTES at a time, copied into a batch of its own.
 * why not fs.createWriteStream: it writes each chunk as it comes when the disk keeps up (an upload's
 * 64 KB socket reads: ~20 writes a MB), and each write is a task handed to a libuv thread and back,
 * ~40 µs of CPU on a 2-core VM where waking a thread is dear: 0.67–0.74 ms of CPU a MB written that
 * way against 0.25–0.28 ms copied into 512 KB batches (in process, 200 MB). why copied, not the
 * chunks as they came in one writev (0.23 ms): chunks held until their batch fills outlive the
 * API's young collections (see apps/api/src/files/young-collection.ts), and the old generation's
 * collector then cost the API more than the writes saved.
 */
export class FileSink extends Writable {
  private handle?: FileHandle;
  private batch?: Buffer;
  private filled = 0;
  /** A write of the batch is under way: the batch is not to be reused until it ends. */
  private writing = false;

  constructor(private readonly path: string) {
    super();
  }

  override _construct(done: (error?: Error | null) => void): void {
    open(this.path, 'w').then((handle) => {
      this.handle = handle;
      done();
    }, done);
  }

  override _write(chunk: Uint8Array, _encoding: BufferEncoding, done: (error?: Error | null) => void): void {
    let offset = 0;
    const fill = (): void => {
      while (offset < chunk.length) {
        this.batch ??= spare.pop() ?? Buffer.allocUnsafeSlow(SINK_BATCH_BYTES);
        const n = Math.min(SINK_BATCH_BYTES - this.filled, chunk.length - offset);
        this.batch.set(chunk.subarray(offset, offset + n), this.filled);
        this.filled += n;
        offset += n;
        if (this.filled === SINK_BATCH_BYTES) {
          this.flush().then(fill, done);
          return;
        }
      }
      done();
    };
    fill();
  }

  override _final(done: (error?: Error | null) => void): void {
    this.flush()
      .then(() => this.close())
      .then(() => done(), done);
  }

  override _destroy(error: Error | null, done: (error?: Error | null) => void): void {
    this.close().then(
      () => done(error),
      () => done(error),
    );
  }

  private async flush(): Promise<void> {
    if (!this.batch || this.filled === 0) return;
    this.writing = true;
    // why a loop: a write may take less than it was given; the rest goes again.
    for (let written = 0; written < this.filled; ) {
      const { bytesWritten } = await this.handle!.write(this.batch, written, this.filled - written);
      if (bytesWritten === 0) throw new Error(`nothing written to ${this.path}`);
      written += bytesWritten;
    }
    this.writing = false;
    this.filled = 0;
  }

  private async close(): Promise<void> {
    if (this.batch && !this.writing && spare.length < MAX_SPARE) spare.push(this.batch);
    this.batch = undefined;
    const handle = this.handle;
    this.handle = undefined;
    await handle?.close();
  }
}
