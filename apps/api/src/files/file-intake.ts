import type { IncomingMessage } from 'node:http';
import { Inject, Injectable, Optional } from '@nestjs/common';
import Busboy, { type BusboyFileStream } from '@fastify/busboy';
import { BLOB_STORE, blobKeyOf, type BlobStore, type FileRef, isBlobStoreError, promote } from '@app/blobs';
import { CONFIG, type Config } from '@app/config';
import type { JobDefinition } from '@app/jobs';
import { BlobLeases, inputLeaseUntil } from '@app/queue';
import { ApiError } from '../http/api-error';
import { validInput } from '../jobs/job-input';
import { callerOf } from '../security/caller';
import { refuse, type Staged, stageFile } from './file-meter';
import { Sha256Thread } from './sha256-thread';
import { UPLOAD_CLAIMS, type UploadClaims } from './upload-claims';

/** A multipart submission as read: the `input` part parsed, each declared file stored under its hash. */
export interface Intake {
  body: unknown;
  files: Record<string, FileRef>;
}


/** A refused submission's body is read to its end, not cut off, when it is at most this long. */
const READ_OUT_BYTES = 1024 * 1024;

/** JSON.parse that refuses what the JSON body parser refuses: keys that would set a prototype. */
function parseInput(text: string): unknown {
  try {
    return JSON.parse(text, (key, value: unknown) => {
      if (key === '__proto__' || key === 'constructor') throw new Error(`the key "${key}" is not allowed`);
      return value;
    });
  } catch (error) {
    throw refuse('MALFORMED_REQUEST', `The "input" part is not JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/**
 * Reads `multipart/form-data` submissions of types that take files: one part `input` (the JSON
 * input), one part per declared file: the file itself, or a field holding the id of an upload
 * (POST /v1/uploads) of the caller's, when the uploads capability is there (see UploadClaims). Each file streams into the blob store while it is hashed
 * (SHA-256), measured and sniffed; nothing holds a whole file in memory. A file over its limit is
 * cut off there (413), one of another type than its declaration accepts, by its first bytes, is
 * refused (415); a client that stalls is cut off by REQUEST_TIMEOUT_MS (the server's). Every file
 * is staged first and moved to its content address only once the whole body was read, so a
 * refused, failed or aborted submission leaves nothing in the store.
 */
@Injectable()
export class FileIntake {
  constructor(
    @Inject(BLOB_STORE) private readonly store: BlobStore | null,
    @Inject(CONFIG) private readonly config: Config,
    private readonly leases: BlobLeases,
    private readonly hashes: Sha256Thread,
    @Optional() @Inject(UPLOAD_CLAIMS) private readonly uploads: UploadClaims | null = null,
  ) {}

  async read(def: JobDefinition, req: IncomingMessage): Promise<Intake> {
    const store = this.store;
    if (!store) throw new ApiError('BLOB_STORE_UNAVAILABLE', 'This service has no blob store (BLOB_STORE_URL)');
    const declared = Object.entries(def.files);
    const abort = new AbortController();
    const staged: Staged[] = [];
    /** Files named by an upload's id (a field part, not a file part): see UploadClaims. */
    const named: Array<{ name: string; upload: string }> = [];
    const writes: Array<Promise<unknown>> = [];
    let input: string | undefined;
    let refusal: unknown;
    const fail = (error: unknown) => {
      refusal ??= error;
      abort.abort(refusal);
    };

    const parsing = new Promise<void>((resolve, reject) => {
      let bb;
      try {
        bb = Busboy({
          headers: req.headers as { 'content-type': string },
          limits: {
            // why one part more than there may be: that one gets its name in the refusal (unknownPart).
            fields: declared.length + 2,
            files: declared.length + 2,
            parts: declared.length + 2,
            fieldSize: this.config.bodyLimit,
            // why one byte past the largest: the meter below sees it and answers 413 itself.
            fileSize: Math.max(this.config.bodyLimit, ...declared.map(([, file]) => file.maxBytes)) + 1,
            headerPairs: 20,
          },
        });
      } catch (error) {
        reject(refuse('MALFORMED_REQUEST', `Not a multipart/form-data body: ${error instanceof Error ? error.message : String(error)}`));
        return;
      }
      const seen = new Set<string>();
      const once = (name: string) => {
        if (seen.has(name)) throw refuse('MALFORMED_REQUEST', `The part "${name}" is sent twice`);
        seen.add(name);
      };
      bb.on('field', (name: string, value: string, _nameTruncated: boolean, valueTruncated: boolean) => {
        try {
          once(name);
          if (def.files[name]) {
            if (!this.uploads) throw refuse('INVALID_INPUT', `The part "${name}" must be the file itself (a part with a filename): this service takes no uploads`);
            named.push({ name, upload: value.trim() });
            return;
          }
          if (name !== 'input') throw this.unknownPart(def, name);
          if (valueTruncated) throw refuse('PAYLOAD_TOO_LARGE', `The "input" part is larger than BODY_LIMIT (${this.config.bodyLimit} bytes)`);
          input = value;
        } catch (error) {
          fail(error);
        }
      });
      bb.on('file', (name: string, stream: BusboyFileStream) => {
        try {
          once(name);
          if (name === 'input') {
            // A client may send the JSON input as a file part (curl -F input=@input.json).
            const chunks: Buffer[] = [];
            let bytes = 0;
            stream.on('data', (chunk: Buffer) => {
              bytes += chunk.length;
              if (bytes > this.config.bodyLimit) fail(refuse('PAYLOAD_TOO_LARGE', `The "input" part is larger than BODY_LIMIT (${this.config.bodyLimit} bytes)`));
              else chunks.push(chunk);
            });
            stream.on('end', () => (input = Buffer.concat(chunks).toString('utf8')));
            return;
          }
          if (!def.files[name]) throw this.unknownPart(def, name);
          writes.push(stageFile(store, this.hashes, def, name, stream, abort.signal, fail).then((s) => staged.push(s), fail));
        } catch (error) {
          stream.resume();
          fail(error);
        }
      });
      for (const limit of ['partsLimit', 'filesLimit', 'fieldsLimit']) {
        bb.on(limit, () => fail(refuse('INVALID_INPUT', `"${def.name}" takes the parts ${['input', ...Object.keys(def.files)].join(', ')}, no more`)));
      }
      bb.on('error', (error: unknown) => reject(refuse('MALFORMED_REQUEST', `Unreadable multipart body: ${error instanceof Error ? error.message : String(error)}`)));
      bb.on('finish', resolve);
      abort.signal.addEventListener('abort', () => {
        req.unpipe(bb);
        // why read out a small body: its client may still be writing it, and a connection closed
        // under its writes fails its request (EPIPE) before it reads the refusal. A larger one is cut
        // off (see refuse); a client that stalls is cut off by the server's request timeout.
        if (Number(req.headers['content-length']) <= READ_OUT_BYTES && !req.readableEnded && !req.destroyed) {
          req.once('end', resolve).once('close', resolve).resume();
        } else resolve();
      });
      req.on('error', fail);
      req.on('aborted', () => fail(refuse('MALFORMED_REQUEST', 'The client went away mid-upload')));
      req.pipe(bb);
    });

    try {
      await parsing;
      await Promise.all(writes);
      if (refusal) throw refusal;
      if (input === undefined) throw refuse('INVALID_INPUT', `A multipart submission of "${def.name}" needs a part named "input" holding its JSON input`);
      const missing = declared.filter(([name]) => !staged.some((s) => s.name === name) && !named.some((n) => n.name === name)).map(([name]) => name);
      if (missing.length > 0) {
        throw new ApiError('INVALID_INPUT', `"${def.name}" needs the file(s) ${missing.join(', ')}`, {
          errors: missing.map((name) => ({ field: name, message: 'required file part missing' })),
        });
      }
      const body = parseInput(input);
      validInput(def, body);
      // Only now, with the whole body read and accepted, do the files take their content addresses.
      // why the lease first: an object found at its address is then kept for this job (blob-leases.ts).
      await this.leases.hold(staged.map((file) => blobKeyOf(file.sha256)), inputLeaseUntil(Date.now(), def, this.config.jobRetentionSeconds));
      for (const file of staged) await promote(store, file.staging, file.sha256);
      const files: Record<string, FileRef> = Object.fromEntries(staged.map(({ name, sha256, bytes, contentType }) => [name, { sha256, bytes, contentType }]));
      for (const { name, upload } of named) files[name] = await this.uploads!.claim(upload, callerOf(req).scope, def, name);
      return { body, files };
    } catch (error) {
      await Promise.allSettled(writes);
      await store.delete(staged.map((s) => s.staging)).catch(() => undefined);
      throw isBlobStoreError(error) ? this.storeDown(store) : error;
    }
  }

  private unknownPart(def: JobDefinition, name: string): ApiError {
    const parts = ['input', ...Object.keys(def.files)].map((p) => `"${p}"`).join(', ');
    return refuse('INVALID_INPUT', `"${def.name}" takes no part named "${name}"; its parts are ${parts}`);
  }

  private storeDown(store: BlobStore): ApiError {
    return new ApiError('BLOB_STORE_UNAVAILABLE', `The blob store (${store.name}) is unavailable; nothing was queued, retry later`, { retryAfterSeconds: 5 });
  }
}
