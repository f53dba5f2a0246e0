import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Inject, Injectable, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { BLOB_STORE, blobKeyOf, type BlobStore, type FileRef, isBlobStoreError, promote } from '@app/blobs';
import { CONFIG, type Config } from '@app/config';
import { type JobDefinition, JobRegistry } from '@app/jobs';
import { type Logger, LOGGER } from '@app/logging';
import { BlobLeases, inputLeaseUntil, uploadKey } from '@app/queue';
import type { RedisClient } from '@app/redis';
import { FileMeter, stageFile } from '../files/file-meter';
import { Sha256Thread } from '../files/sha256-thread';
import type { UploadClaims } from '../files/upload-claims';
import { ApiError } from '../http/api-error';
import { Periodic } from '../periodic';
import { QUEUE_REDIS } from '../queues/queue.providers';

/** How often a replica removes the objects of expired uploads (every replica does; deletes are idempotent). */
const SWEEP_EVERY_MS = 10 * 60 * 1000;
/** why a grace: a submission that claimed an upload just before its expiry may still be moving its object. */
const SWEEP_GRACE_MS = 5 * 60 * 1000;
const UPLOAD_ID = /^[0-9a-z]{1,10}-[0-9a-f]{32}$/;

/** Where the bytes of upload `id` wait for the submission that uses them. */
export const uploadObjectKey = (id: string): string => `uploads/${id}`;

/** When upload `id` expires (epoch ms): its id starts with it, so a sweep needs no record. */
export function uploadExpiry(id: string): number | undefined {
  return UPLOAD_ID.test(id) ? parseInt(id.slice(0, id.indexOf('-')), 36) * 1000 : undefined;
}

/**
 * Removes from `store` the objects of uploads expired (with a grace) and never used, and of names no
 * upload has; how many. Once `signal` aborts it stops listing and deletes nothing: what it had found
 * is due again at the next sweep.
 */
export async function sweepUploads(store: BlobStore, now = Date.now(), signal?: AbortSignal): Promise<number> {
  const expired: string[] = [];
  for await (const key of store.list('uploads/')) {
    if (signal?.aborted) return 0;
    const expiry = uploadExpiry(key.slice('uploads/'.length));
    if (expiry === undefined || expiry + SWEEP_GRACE_MS < now) expired.push(key);
  }
  if (signal?.aborted) return 0;
  await store.delete(expired);
  return expired.length;
}

/** What Redis keeps of an upload until it is used or expires. */
interface UploadRecord {
  scope: string;
  type: string;
  file: string;
  /** The file as it arrived through the API (PUT /v1/uploads/{id}); a direct PUT to S3 is read at its claim. */
  ref?: FileRef;
}

export interface CreatedUpload {
  id: string;
  method: 'PUT';
  /** The S3 store's presigned URL, or this API's `/v1/uploads/{id}` (the same API key, `application/octet-stream`). */
  url: string;
  expiresAt: string;
}

/**
 * Uploads of files larger than a submission should carry: POST /v1/uploads makes one for a file of
 * a type (whose caller it is, expiring after UPLOAD_TTL_SECONDS); its bytes go by a presigned PUT
 * straight into the S3 store, or streamed through PUT /v1/uploads/{id} into a file store; the
 * submission then names the upload's id instead of sending the file (UploadClaims). An upload
 * serves one submission; the objects of those never used are removed once they expire.
 */
@Injectable()
export class Uploads implements UploadClaims, OnModuleInit, OnApplicationShutdown {
  private readonly ttlSeconds: number;
  private readonly sweeps: Periodic;

  constructor(
    @Inject(BLOB_STORE) private readonly store: BlobStore | null,
    @Inject(QUEUE_REDIS) private readonly redis: RedisClient,
    @Inject(CONFIG) private readonly config: Config,
    @Inject(LOGGER) private readonly logger: Logger,
    private readonly registry: JobRegistry,
    private readonly leases: BlobLeases,
    private readonly hashes: Sha256Thread,
  ) {
    this.ttlSeconds = config.uploadTtlSeconds;
    this.sweeps = new Periodic(SWEEP_EVERY_MS, (signal) => this.sweep(Date.now(), signal), (error) => this.logger.warn({ err: error }, 'upload sweep failed; the next one retries'));
  }

  onModuleInit(): void {
    // why skipped while one runs (Periodic): listing a large S3 store (a request per 1000 objects) can outlast the interval.
    if (this.store) this.sweeps.start();
  }

  onApplicationShutdown(): Promise<void> {
    return this.sweeps.stop();
  }

  async create(scope: string, type: string, name: string, bytes: number): Promise<CreatedUpload> {
    const def = this.registry.get(type);
    if (!def) throw new ApiError('UNKNOWN_JOB_TYPE', `No job type "${type}"`);
    const file = def.files[name];
    if (!file) {
      const files = Object.keys(def.files);
      throw new ApiError('INVALID_INPUT', files.length ? `"${type}" takes no file "${name}"; its files are ${files.join(', ')}` : `"${type}" takes no files`, {
        errors: [{ field: 'file', message: 'not a file of this type' }],
      });
    }
    if (bytes > file.maxBytes) throw new ApiError('PAYLOAD_TOO_LARGE', `The file "${name}" of ${bytes} bytes is larger than ${file.maxBytes} bytes, the most "${type}" takes`);
    const store = this.storeOrFail();
    const expiresAt = Math.ceil(Date.now() / 1000) + this.ttlSeconds;
    const id = `${expiresAt.toString(36)}-${randomBytes(16).toString('hex')}`;
    await this.redis.set(uploadKey(this.config.redisPrefix, id), JSON.stringify({ scope, type, file: name } satisfies UploadRecord), 'EX', this.ttlSeconds);
    const presigned = await this.storeCall(store, () => store.presign('PUT', uploadObjectKey(id), { expiresSeconds: this.ttlSeconds }));
    return { id, method: 'PUT', url: presigned ?? `/v1/uploads/${id}`, expiresAt: new Date(expiresAt * 1000).toISOString() };
  }

  /** PUT /v1/uploads/{id}: streams the file into the store while it is hashed, measured and sniffed, as a part would be. */
  async receive(id: string, scope: string, req: IncomingMessage): Promise<void> {
    const key = uploadKey(this.config.redisPrefix, id);
    const record = await this.recordOf(id, scope);
    const def = this.registry.get(record.type)!;
    const store = this.storeOrFail();
    const abort = new AbortController();
    let refusal: unknown;
    const fail = (error: unknown) => {
      refusal ??= error;
      abort.abort(refusal);
    };
    req.on('aborted', () => fail(new ApiError('MALFORMED_REQUEST', 'The client went away mid-upload')));
    try {
      const staged = await stageFile(store, this.hashes, def, record.file, req, abort.signal, fail, uploadObjectKey(id));
      if (refusal) throw refusal;
      const { sha256, bytes, contentType } = staged;
      // why KEEPTTL: the upload expires when it said it would, whenever its bytes arrived.
      await this.redis.set(key, JSON.stringify({ ...record, ref: { sha256, bytes, contentType } } satisfies UploadRecord), 'KEEPTTL');
    } catch (error) {
      const reason = refusal ?? error;
      throw isBlobStoreError(reason) ? this.storeDown(this.store!) : reason;
    }
  }

  async claim(id: string, scope: string, def: JobDefinition, name: string): Promise<FileRef> {
    const record = await this.recordOf(id, scope);
    if (record.type !== def.name || record.file !== name) throw this.notFound(id, `is for the file "${record.file}" of "${record.type}"`);
    const key = uploadKey(this.config.redisPrefix, id);
    const ttl = await this.redis.pttl(key);
    // why GETDEL: of two submissions naming one upload, one gets it.
    if ((await this.redis.getdel(key)) === null) throw this.notFound(id, 'was used or expired');
    const store = this.storeOrFail();
    try {
      const ref = record.ref ?? (await this.inspect(store, def, name, id));
      // why the lease first: see FileIntake.
      await this.leases.hold([blobKeyOf(ref.sha256)], inputLeaseUntil(Date.now(), def, this.config.jobRetentionSeconds));
      await promote(store, uploadObjectKey(id), ref.sha256);
      return ref;
    } catch (error) {
      if (error instanceof ApiError && error.code !== 'INVALID_INPUT') {
        await store.delete([uploadObjectKey(id)]).catch(() => undefined);
        throw error;
      }
      // A store that failed, or bytes not there yet: the upload stays usable for a retry.
      if (ttl > 0) await this.redis.set(key, JSON.stringify(record), 'PX', ttl).catch(() => undefined);
      throw isBlobStoreError(error) ? this.storeDown(store) : error;
    }
  }

  /** Removes the objects of uploads expired (with a grace) and never used; how many. (Unfinished writes: the core's BlobSweeper.) */
  sweep(now = Date.now(), signal?: AbortSignal): Promise<number> {
    return this.store ? sweepUploads(this.store, now, signal) : Promise.resolve(0);
  }

  /** Hashes, measures and sniffs an upload PUT straight into the store (S3), as a part would be. */
  private async inspect(store: BlobStore, def: JobDefinition, name: string, id: string): Promise<FileRef> {
    const read = await store.read(uploadObjectKey(id));
    if (!read) throw new ApiError('INVALID_INPUT', `The upload "${id}" has no bytes yet: PUT the file to its url first`);
    const meter = new FileMeter(def, name, () => undefined, this.hashes);
    await pipeline(read.body, meter, new Writable({ write: (_chunk, _encoding, done) => done() }));
    return meter.ref();
  }

  private async recordOf(id: string, scope: string): Promise<UploadRecord> {
    const json = UPLOAD_ID.test(id) ? await this.redis.get(uploadKey(this.config.redisPrefix, id)) : null;
    const record = json === null ? undefined : (JSON.parse(json) as UploadRecord);
    // why the same answer for another caller's: no way to learn that an id exists.
    if (!record || record.scope !== scope) throw this.notFound(id, 'does not exist, expired, or is not yours');
    return record;
  }

  private notFound(id: string, why: string): ApiError {
    return new ApiError('UPLOAD_NOT_FOUND', `The upload "${id}" ${why}`);
  }

  private storeOrFail(): BlobStore {
    if (!this.store) throw new ApiError('BLOB_STORE_UNAVAILABLE', 'This service has no blob store (BLOB_STORE_URL)');
    return this.store;
  }

  private async storeCall<T>(store: BlobStore, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      throw isBlobStoreError(error) ? this.storeDown(store) : error;
    }
  }

  private storeDown(store: BlobStore): ApiError {
    return new ApiError('BLOB_STORE_UNAVAILABLE', `The blob store (${store.name}) is unavailable; retry later`, { retryAfterSeconds: 5 });
  }
}
