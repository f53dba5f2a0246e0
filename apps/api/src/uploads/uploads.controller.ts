import { Body, Controller, HttpCode, Param, Post, Put, Req } from '@nestjs/common';
import { RouteConfig } from '@nestjs/platform-fastify';
import { ApiBody, ApiConsumes, ApiOperation, ApiParam, ApiResponse, ApiTags } from '../http/openapi.recorder';
import type { FastifyRequest } from 'fastify';
import { z } from 'zod';
import { ApiError } from '../http/api-error';
import { ApiProblems } from '../http/openapi.decorators';
import { callerOf } from '../security/caller';
import { type CreatedUpload, Uploads } from './uploads';

const NEW_UPLOAD = z.strictObject({
  type: z.string().min(1).max(63),
  file: z.string().min(1).max(63),
  bytes: z.int().min(1),
});

/** POST /v1/uploads and PUT /v1/uploads/{id}: files larger than a submission should carry. */
@ApiTags('uploads')
@Controller('v1/uploads')
export class UploadsController {
  constructor(private readonly uploads: Uploads) {}

  @Post()
  @HttpCode(201)
  @ApiOperation({
    summary: 'Start an upload of a file a job type takes',
    description:
      'For a file larger than a request should carry: PUT its bytes to `url` (a presigned URL of the S3 store, or this API’s `/v1/uploads/{id}` with your API key and `Content-Type: application/octet-stream`) before `expiresAt`, then submit the job with a `multipart/form-data` field of the file’s name holding `id` instead of the file. An upload is yours alone and serves one submission.',
  })
  @ApiBody({
    schema: {
      type: 'object',
      additionalProperties: false,
      required: ['type', 'file', 'bytes'],
      properties: {
        type: { type: 'string', description: 'The job type that takes the file.' },
        file: { type: 'string', description: 'The name the type declares the file under.' },
        bytes: { type: 'integer', minimum: 1, description: 'The file’s size: at most what the type takes.' },
      },
    },
  })
  @ApiResponse({
    status: 201,
    description: 'Where to PUT the file, and the id a submission names.',
    schema: {
      type: 'object',
      required: ['id', 'method', 'url', 'expiresAt'],
      properties: { id: { type: 'string' }, method: { type: 'string', enum: ['PUT'] }, url: { type: 'string' }, expiresAt: { type: 'string', format: 'date-time' } },
    },
  })
  @ApiProblems('INVALID_INPUT', 'UNKNOWN_JOB_TYPE', 'PAYLOAD_TOO_LARGE', 'BLOB_STORE_UNAVAILABLE')
  create(@Body() body: unknown, @Req() req: FastifyRequest): Promise<CreatedUpload> {
    const parsed = NEW_UPLOAD.safeParse(body);
    if (!parsed.success) {
      throw new ApiError('INVALID_INPUT', 'POST /v1/uploads takes {"type", "file", "bytes"}', {
        errors: parsed.error.issues.map((issue) => ({ field: issue.path.join('.') || '(body)', message: issue.message })),
      });
    }
    return this.uploads.create(callerOf(req.raw).scope, parsed.data.type, parsed.data.file, parsed.data.bytes);
  }

  @Put(':id')
  @HttpCode(204)
  // why: the body streams into the store unread by Fastify (see registerMultipartBody).
  @RouteConfig({ streamsBody: true })
  @ApiOperation({
    summary: 'Send an upload’s bytes through the API',
    description:
      'The `url` of an upload into a file store: the body (`application/octet-stream`) streams into the store while it is hashed and checked as a file part is (`413` past the type’s limit, `415` for another type by its bytes). Sending again replaces what was sent.',
  })
  @ApiParam({ name: 'id', description: 'The upload’s id.', schema: { type: 'string' } })
  @ApiConsumes('application/octet-stream')
  @ApiBody({ required: true, schema: { type: 'string', format: 'binary' } })
  @ApiResponse({ status: 204, description: 'Received.' })
  @ApiProblems('UPLOAD_NOT_FOUND', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE', 'BLOB_STORE_UNAVAILABLE')
  async receive(@Param('id') id: string, @Req() req: FastifyRequest): Promise<void> {
    await this.uploads.receive(id, callerOf(req.raw).scope, req.raw);
  }
}
