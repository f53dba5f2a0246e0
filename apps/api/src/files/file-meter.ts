import { type Readable, Transform, type TransformCallback } from 'node:stream';
import { type BlobStore, type FileRef, stagingKeyOf } from '@app/blobs';
import { type FileInput, type JobDefinition, sniff, SNIFF_BYTES } from '@app/jobs';
import { ApiError } from '../http/api-error';
import type { Sha256Thread, ThreadSha256 } from './sha256-thread';
import { uploaded } from './young-collection';

// why close the connection on a refusal: the client may still be sending a large body; reading it
// all only to drop it costs the bandwidth the limit was there to save.
export const refuse = (code: 'PAYLOAD_TOO_LARGE' | 'UNSUPPORTED_MEDIA_TYPE' | 'MALFORMED_REQUEST' | 'INVALID_INPUT', detail: string) =>
  new ApiError(code, detail, { headers: { connection: 'close' } });

/** A file received whole into its staging object. */
export interface Staged extends FileRef {
  name: string;
  staging: string;
}

/**
 * A file passing through on its way to the store: hashed (SHA-256, on the hashing thread), measured
 * and sniffed. Past the declared `maxBytes` it errors with 413, and with 415 once its first bytes
 * show a type the declaration does not accept; `fail` hears the refusal first.
 */
export class FileMeter extends Transform {
  private readonly hash: ThreadSha256;
  private bytes = 0;
  private head: Buffer = Buffer.alloc(0);
  private contentType: string | undefined;
  private readonly file: FileInput;

  constructor(
    private readonly def: JobDefinition,
    private readonly name: string,
    private readonly fail: (e: unknown) => void,
    hashes: Sha256Thread,
  ) {
    super();
    this.file = def.files[name];
    this.hash = hashes.hash();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    this.bytes += chunk.length;
    try {
      if (this.bytes > this.file.maxBytes) throw refuse('PAYLOAD_TOO_LARGE', `The file "${this.name}" is larger than ${this.file.maxBytes} bytes, the most "${this.def.name}" takes`);
      if (this.contentType === undefined) {
        this.head = Buffer.concat([this.head, chunk.subarray(0, SNIFF_BYTES)]).subarray(0, SNIFF_BYTES);
        if (this.head.length >= SNIFF_BYTES) this.check();
      }
    } catch (error) {
      this.fail(error);
      done(error as Error);
      return;
    }
    this.hash.update(chunk);
    uploaded(chunk.length);
    // why wait when the thread is behind: its batches would pile up in memory, a file's worth.
    if (!this.hash.backlogged) done(null, chunk);
    else this.hash.drained().then(() => done(null, chunk), (error: Error) => done(error));
  }

  // why not on every destroy: a meter that passed the whole file is destroyed (autoDestroy) before ref().
  override _destroy(error: Error | null, done: (error: Error | null) => void): void {
    if (error || !this.writableFinished) this.discard();
    done(error);
  }

  override _flush(done: TransformCallback): void {
    try {
      if (this.contentType === undefined) this.check();
      done();
    } catch (error) {
      this.fail(error);
      done(error as Error);
    }
  }

  /** Lets go of the file's hash, when no ref() will be asked for. */
  discard(): void {
    this.hash.drop();
  }

  /** The file as it passed, once it all has. */
  async ref(): Promise<FileRef> {
    return { sha256: await this.hash.digest(), bytes: this.bytes, contentType: this.contentType! };
  }

  private check(): void {
    const type = sniff(this.head);
    if (!type || !this.file.accept.includes(type)) {
      throw refuse('UNSUPPORTED_MEDIA_TYPE', `The file "${this.name}" is ${type ?? 'of a type this service does not recognize'}; "${this.def.name}" accepts ${this.file.accept.join(', ')} (checked by its content)`);
    }
    this.contentType = type;
  }
}

/**
 * Streams one file into `key` (a new staging object by default), hashing, measuring and sniffing
 * it on the way (see FileMeter): the file as stored, or the refusal, through `fail` too.
 */
export async function stageFile(
  store: BlobStore,
  hashes: Sha256Thread,
  def: JobDefinition,
  name: string,
  source: Readable,
  signal: AbortSignal,
  fail: (e: unknown) => void,
  key = stagingKeyOf(),
): Promise<Staged> {
  const meter = new FileMeter(def, name, fail, hashes);
  source.on('error', (error) => meter.destroy(error));
  // why a listener that does nothing: a refusal reaches the request through `fail`, and aborts the
  // store's write, which may have stopped listening by the time the meter errors.
  meter.on('error', () => undefined);
  source.pipe(meter);
  try {
    await store.write(key, meter, { signal });
  } catch (error) {
    source.resume();
    meter.discard();
    throw signal.aborted ? signal.reason : error;
  }
  try {
    return { name, staging: key, ...(await meter.ref()) };
  } catch (error) {
    // The file is stored, its hash lost (the hashing thread died): nobody will ask for the object.
    await store.delete([key]).catch(() => undefined);
    throw error;
  }
}
