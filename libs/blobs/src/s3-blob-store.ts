import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { text } from 'node:stream/consumers';
import {
  AbortMultipartUploadCommand,
  CopyObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  paginateListObjectsV2,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { BlobTarget } from '@app/config';
import { type BlobInfo, type BlobRead, type BlobStore, BlobStoreError, checkKey, type PresignOptions, type WriteOptions } from './blob-store';
import { contentDisposition } from './content-disposition';

type S3Target = Extract<BlobTarget, { kind: 's3' }>;

/** Parts of a multipart upload: S3's smallest. why 2 at a time: a write holds at most 10 MB of a stream in memory. */
const PART_BYTES = 5 * 1024 * 1024;
const PARTS_IN_FLIGHT = 2;
/** DeleteObjects takes at most this many keys. */
const DELETE_BATCH = 1000;

const notFound = (error: unknown) => {
  const e = error as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e?.name === 'NoSuchKey' || e?.name === 'NotFound' || e?.$metadata?.httpStatusCode === 404;
};

/**
 * A bucket of any S3-compatible store (AWS S3, MinIO, R2, GCS interop) through the AWS SDK v3,
 * credentials from its default chain (AWS_* variables, shared files, the pod's role). Large writes
 * go as multipart uploads (lib-storage), which an abort cancels; clients download by presigned URL.
 */
export class S3BlobStore implements BlobStore {
  readonly name: string;
  private readonly client: S3Client;

  constructor(private readonly target: S3Target) {
    this.name = `s3://${target.bucket}/${target.prefix}${target.endpoint ? ` at ${target.endpoint}` : ''}`;
    this.client = new S3Client({
      ...(target.endpoint && { endpoint: target.endpoint }),
      ...(target.region && { region: target.region }),
      forcePathStyle: target.forcePathStyle,
      // why: checksums only where S3 requires them; several S3-compatible stores reject the SDK's
      // default CRC headers, and a presigned PUT would need the client to send one.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      // why bounded: a store that does not answer fails the request (a 503 at submission) instead of holding it.
      requestHandler: { connectionTimeout: 3000, requestTimeout: 30_000 },
      maxAttempts: 2,
    });
  }

  async write(key: string, body: Readable | Uint8Array, options: WriteOptions = {}): Promise<BlobInfo> {
    const Key = this.key(key);
    const abort = new AbortController();
    const onAbort = () => abort.abort(options.signal?.reason);
    options.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      if (options.signal?.aborted) throw options.signal.reason;
      const upload = new Upload({
        client: this.client,
        params: { Bucket: this.target.bucket, Key, Body: body, ...(options.contentType && { ContentType: options.contentType }) },
        partSize: PART_BYTES,
        queueSize: PARTS_IN_FLIGHT,
        leavePartsOnError: false,
        abortController: abort,
      });
      await upload.done();
      const info = await this.stat(key);
      if (!info) throw new Error('the object is missing right after its upload');
      return info;
    } catch (error) {
      if (options.signal?.aborted) {
        // A body the upload stopped reading would hold its source open.
        if (body instanceof Readable) body.destroy();
        throw options.signal.reason;
      }
      throw this.failed('write', error);
    } finally {
      options.signal?.removeEventListener('abort', onAbort);
    }
  }

  async read(key: string, range?: { start: number; end?: number }): Promise<BlobRead | undefined> {
    try {
      const out = await this.client.send(
        new GetObjectCommand({ Bucket: this.target.bucket, Key: this.key(key), ...(range && { Range: `bytes=${range.start}-${range.end ?? ''}` }) }),
      );
      const body = out.Body as Readable;
      const total = range ? Number(/\/(\d+)$/.exec(out.ContentRange ?? '')?.[1] ?? out.ContentLength) : Number(out.ContentLength);
      const read: BlobRead = { body, bytes: total, etag: out.ETag ?? '' };
      if (!range) return read;
      return { ...read, range: { start: range.start, end: range.start + Number(out.ContentLength) - 1 } };
    } catch (error) {
      if (notFound(error)) return undefined;
      throw this.failed('read', error);
    }
  }

  async stat(key: string): Promise<BlobInfo | undefined> {
    try {
      const out = await this.client.send(new HeadObjectCommand({ Bucket: this.target.bucket, Key: this.key(key) }));
      return { bytes: Number(out.ContentLength), etag: out.ETag ?? '' };
    } catch (error) {
      if (notFound(error)) return undefined;
      throw this.failed('stat', error);
    }
  }

  async move(from: string, to: string): Promise<void> {
    try {
      // why copy then delete: S3 has no rename. A copy is one request up to 5 GB, done inside the store.
      await this.client.send(
        new CopyObjectCommand({ Bucket: this.target.bucket, Key: this.key(to), CopySource: `${this.target.bucket}/${encodeURI(this.key(from))}` }),
      );
    } catch (error) {
      throw this.failed('move', error);
    }
    await this.delete([from]);
  }

  async delete(keys: readonly string[], options: { readonly signal?: AbortSignal } = {}): Promise<void> {
    try {
      for (let i = 0; i < keys.length; i += DELETE_BATCH) {
        options.signal?.throwIfAborted();
        const Objects = keys.slice(i, i + DELETE_BATCH).map((key) => ({ Key: this.key(key) }));
        const out = await this.client.send(new DeleteObjectsCommand({ Bucket: this.target.bucket, Delete: { Objects, Quiet: true } }), {
          abortSignal: options.signal,
        });
        const failed = (out.Errors ?? []).filter((e) => e.Code !== 'NoSuchKey');
        if (failed.length > 0) throw new Error(`${failed.length} object(s) not deleted: ${failed[0].Code} ${failed[0].Message ?? ''}`);
      }
    } catch (error) {
      throw this.failed('delete', error);
    }
  }

  async *list(prefix = ''): AsyncIterable<string> {
    const Prefix = `${this.target.prefix}${prefix}`;
    try {
      for await (const page of paginateListObjectsV2({ client: this.client }, { Bucket: this.target.bucket, Prefix })) {
        for (const object of page.Contents ?? []) if (object.Key) yield object.Key.slice(this.target.prefix.length);
      }
    } catch (error) {
      throw this.failed('list', error);
    }
  }

  /**
   * Multipart uploads begun before `before` and never completed (a process that died mid-write):
   * aborted, so their parts stop taking space. A store that cannot list them (some S3-compatible
   * ones) leaves it to a bucket lifecycle rule (docs/deploy.md).
   */
  async removePartial(before: Date): Promise<number> {
    let removed = 0;
    let out;
    try {
      out = await this.client.send(new ListMultipartUploadsCommand({ Bucket: this.target.bucket, Prefix: this.target.prefix }));
    } catch {
      return 0;
    }
    for (const upload of out.Uploads ?? []) {
      if (!upload.Key || !upload.UploadId || !upload.Initiated || upload.Initiated >= before) continue;
      await this.client.send(new AbortMultipartUploadCommand({ Bucket: this.target.bucket, Key: upload.Key, UploadId: upload.UploadId })).catch(() => undefined);
      removed++;
    }
    return removed;
  }

  localPath(): undefined {
    return undefined;
  }

  async presign(method: 'GET' | 'PUT', key: string, options: PresignOptions): Promise<string> {
    const Bucket = this.target.bucket;
    const Key = this.key(key);
    const command =
      method === 'PUT'
        ? new PutObjectCommand({ Bucket, Key, ...(options.contentType && { ContentType: options.contentType }) })
        : new GetObjectCommand({
            Bucket,
            Key,
            ...(options.contentType && { ResponseContentType: options.contentType }),
            ...(options.filename && { ResponseContentDisposition: contentDisposition(options.filename) }),
          });
    try {
      return await getSignedUrl(this.client, command, { expiresIn: options.expiresSeconds });
    } catch (error) {
      throw this.failed('presign', error);
    }
  }

  async check(): Promise<void> {
    const key = `health/${randomUUID()}`;
    await this.write(key, Buffer.from('ok'), { contentType: 'text/plain' });
    const read = await this.read(key);
    const back = read && (await text(read.body));
    await this.delete([key]);
    if (back !== 'ok') throw new Error(`a probe object read back as ${JSON.stringify(back)}`);
  }

  close(): void {
    this.client.destroy();
  }

  private key(key: string): string {
    return `${this.target.prefix}${checkKey(key)}`;
  }

  private failed(operation: string, error: unknown): BlobStoreError {
    return new BlobStoreError(this.name, operation, error);
  }
}
