import { Controller, Get, Inject, Param, Req, Res } from '@nestjs/common';
import { ApiOperation, ApiParam, ApiResponse, ApiTags } from '../http/openapi.recorder';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { BLOB_STORE, type BlobStore, blobKeyOf, contentDisposition, isBlobStoreError } from '@app/blobs';
import { ApiError } from '../http/api-error';
import { ApiProblems } from '../http/openapi.decorators';
import { JobReads } from '../jobs/job-reads';
import { callerOf } from '../security/caller';
import { matchesEtag, parseRange } from './byte-range';

/** How long a presigned download URL (S3) stays valid: enough to start the download, not to pass it around. */
export const DOWNLOAD_URL_SECONDS = 300;

/**
 * The files a job returned, for its owners (anyone else gets 404, as for the job): streamed from a
 * file store with Content-Length, ETag (the SHA-256), Range and Content-Disposition, or a 303 to a
 * short-lived presigned URL of the S3 store, so the bytes never pass through the API.
 */
@ApiTags('jobs')
@Controller('v1/jobs')
export class FileDownloadsController {
  constructor(
    private readonly reads: JobReads,
    @Inject(BLOB_STORE) private readonly store: BlobStore | null,
  ) {}

  @Get(':id/files/:name')
  @ApiOperation({
    summary: 'Download a file a job returned',
    description:
      'A file the job view lists in `files` (its `url`), or `result.json`, a result larger than 64 KiB. From a file store: the bytes, with `ETag` (its SHA-256), `Range` requests (`206`) and `If-None-Match` (`304`); from S3: `303` to a presigned URL valid for 5 minutes.',
  })
  @ApiParam({ name: 'id', description: 'The job’s id.', schema: { type: 'string' } })
  @ApiParam({ name: 'name', description: 'The file’s `name` in the job view.', schema: { type: 'string' } })
  @ApiResponse({ status: 200, description: 'The file.', content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } } })
  @ApiResponse({ status: 206, description: 'The range asked for (`Content-Range`).' })
  @ApiResponse({ status: 303, description: 'S3: the file is at `Location`, a presigned URL.' })
  @ApiResponse({ status: 304, description: '`If-None-Match` names its ETag: unchanged.' })
  @ApiProblems('JOB_NOT_FOUND', 'FILE_NOT_FOUND', 'RANGE_NOT_SATISFIABLE', 'QUEUE_UNAVAILABLE', 'BLOB_STORE_UNAVAILABLE')
  async download(@Param('id') id: string, @Param('name') name: string, @Req() req: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    const view = await this.reads.getFor(id, callerOf(req.raw).scope);
    const file = view.files?.find((f) => f.name === name);
    if (!file) throw new ApiError('FILE_NOT_FOUND', `Job "${id}" returned no file "${name}"`);
    const store = this.store;
    if (!store) throw new ApiError('BLOB_STORE_UNAVAILABLE', 'This service has no blob store (BLOB_STORE_URL)');
    const key = blobKeyOf(file.sha256);
    try {
      const url = await store.presign('GET', key, { expiresSeconds: DOWNLOAD_URL_SECONDS, filename: file.name, contentType: file.contentType });
      if (url) {
        await reply.code(303).headers({ location: url, 'cache-control': 'no-store' }).send();
        return;
      }
      // why the hash as the ETag: the content is its address; the same bytes have the same tag on every replica.
      const etag = `"${file.sha256}"`;
      const headers = { etag, 'accept-ranges': 'bytes', 'cache-control': 'private, max-age=3600' };
      if (matchesEtag(req.headers['if-none-match'], etag)) {
        await reply.code(304).headers(headers).send();
        return;
      }
      const ifRange = req.headers['if-range'];
      const range = ifRange === undefined || ifRange === etag ? parseRange(req.headers.range, file.bytes) : undefined;
      if (range === 'unsatisfiable') {
        throw new ApiError('RANGE_NOT_SATISFIABLE', `"${name}" has ${file.bytes} bytes`, { headers: { 'content-range': `bytes */${file.bytes}` } });
      }
      const read = await store.read(key, range);
      if (!read) throw new ApiError('FILE_NOT_FOUND', `The file "${name}" of job "${id}" is no longer stored`);
      const sent = read.range ? read.range.end - read.range.start + 1 : read.bytes;
      await reply
        .code(read.range ? 206 : 200)
        .headers({
          ...headers,
          'content-type': file.contentType,
          'content-length': String(sent),
          'content-disposition': contentDisposition(file.name),
          ...(read.range && { 'content-range': `bytes ${read.range.start}-${read.range.end}/${read.bytes}` }),
        })
        .send(read.body);
    } catch (error) {
      if (isBlobStoreError(error)) throw new ApiError('BLOB_STORE_UNAVAILABLE', `The blob store (${store.name}) is unavailable; retry later`, { retryAfterSeconds: 5 });
      throw error;
    }
  }
}
