import { Readable } from 'node:stream';
import { type BlobStore, LARGE_RESULT_BYTES, RESULT_FILE_NAME, RESULT_JSON, type ResultFile, type StoredResult, writeByContent } from '@app/blobs';

const CONTENT_TYPE = /^[a-z0-9][a-z0-9!#$&^_.+-]*\/[a-z0-9][a-z0-9!#$&^_.+-]*$/i;

/**
 * What one run stores besides its result in Redis: the files it returns (ctx.writeFile), and its
 * JSON result when that is too large for Redis. Written from the pool thread, so no byte of them
 * passes through the worker's event loop; the result keeps their references (a StoredResult).
 */
export class ResultFiles {
  private readonly files: ResultFile[] = [];

  constructor(private readonly store: BlobStore) {}

  readonly write = async (name: string, data: Uint8Array | AsyncIterable<Uint8Array>, contentType: string): Promise<void> => {
    if (!RESULT_FILE_NAME.test(name) || name === RESULT_JSON) throw new Error(`a result file's name must match ${RESULT_FILE_NAME} and not be ${RESULT_JSON}: ${JSON.stringify(name)}`);
    if (!CONTENT_TYPE.test(contentType)) throw new Error(`result file ${name}: not a content type: ${JSON.stringify(contentType)}`);
    if (this.files.some((file) => file.name === name)) throw new Error(`result file ${name} was written already`);
    const body = data instanceof Uint8Array ? data : Readable.from(data, { objectMode: false });
    const { sha256, bytes } = await writeByContent(this.store, body, contentType);
    this.files.push({ name, sha256, bytes, contentType });
  };

  /**
   * The job's result as BullMQ and the cache keep it: `value` itself, or, once a file was written or
   * when `value` is larger than LARGE_RESULT_BYTES as JSON (and `large` allows storing it), a
   * StoredResult. why JSON.stringify here: the size is known only so; a small result, the common
   * case, costs the stringify of a few bytes.
   */
  async result(value: unknown, large: boolean): Promise<unknown> {
    const json = large ? JSON.stringify(value) : undefined;
    const tooLarge = json !== undefined && json.length > LARGE_RESULT_BYTES / 3 && Buffer.byteLength(json) > LARGE_RESULT_BYTES;
    if (!tooLarge) return this.files.length === 0 ? value : ({ $files: this.files, result: value } satisfies StoredResult);
    const { sha256, bytes } = await writeByContent(this.store, Buffer.from(json), 'application/json');
    return { $files: [...this.files, { name: RESULT_JSON, sha256, bytes, contentType: 'application/json' }] } satisfies StoredResult;
  }
}
