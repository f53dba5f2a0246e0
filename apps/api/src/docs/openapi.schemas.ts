import { JobFailureCode } from '@app/jobs';
import { API_ERRORS } from '../http/api-error';
import { type JsonSchema, schemaRef } from '../http/openapi.refs';

/**
 * The shapes the API answers with that are not a job type's own: problems, job views, the job-types
 * listing, probes. Enumerations come from the code (API_ERRORS, JobFailureCode); the e2e test checks
 * real responses against these schemas, so a field added to a view without its schema fails there.
 */
export const COMMON_SCHEMAS: Record<string, JsonSchema> = {
  Problem: {
    type: 'object',
    description: 'RFC 9457 problem details, as `application/problem+json`. `code` is stable; `detail` is for humans.',
    required: ['type', 'title', 'status', 'code', 'detail'],
    properties: {
      type: { type: 'string', format: 'uri', examples: ['urn:nest-offload:problem:invalid-input'] },
      title: { type: 'string' },
      status: { type: 'integer', minimum: 400, maximum: 599 },
      code: { type: 'string', enum: Object.keys(API_ERRORS) },
      detail: { type: 'string' },
      instance: { type: 'string', description: 'The request path.' },
      errors: { type: 'array', description: 'With `INVALID_INPUT`: each bad field.', items: schemaRef('FieldError') },
    },
  },
  FieldError: {
    type: 'object',
    required: ['field', 'message'],
    properties: {
      field: { type: 'string', description: 'Path of the bad field, e.g. `n` or `numbers.3`; empty for the body itself.' },
      message: { type: 'string' },
    },
  },
  JobFailure: {
    type: 'object',
    required: ['code', 'message'],
    properties: { code: { type: 'string', enum: Object.values(JobFailureCode) }, message: { type: 'string' } },
  },
  JobTypeView: {
    type: 'object',
    required: ['type', 'version', 'runsVersions', 'description', 'queue', 'priority', 'inputSchema', 'outputSchema', 'examples', 'timeoutMs', 'cacheTtlSeconds', 'startWithinMs', 'maxAttempts'],
    properties: {
      type: { type: 'string' },
      version: { type: 'integer', minimum: 1 },
      runsVersions: { type: 'array', items: { type: 'integer', minimum: 1 }, description: 'The versions whose queued jobs workers still run, newest first.' },
      description: { type: 'string' },
      queue: { type: 'string' },
      priority: { type: ['integer', 'null'], minimum: 1, description: 'BullMQ priority within the queue (1 first); null: taken before any prioritized job.' },
      inputSchema: { type: 'object', description: 'JSON Schema (2020-12) of the request body.' },
      outputSchema: { type: 'object', description: 'JSON Schema (2020-12) of `result`.' },
      examples: { type: 'array', description: 'Request bodies that show how to call it.' },
      timeoutMs: { type: 'integer' },
      cacheTtlSeconds: { type: 'integer', minimum: 0 },
      startWithinMs: { type: ['integer', 'null'], minimum: 1, description: 'Default start deadline of its jobs (`Start-Within` overrides it); null: none.' },
      maxAttempts: { type: 'integer', minimum: 1 },
    },
  },
  HealthLive: {
    type: 'object',
    required: ['status'],
    properties: { status: { const: 'ok' } },
  },
  HealthReady: {
    type: 'object',
    required: ['status', 'checks'],
    properties: {
      status: { type: 'string', enum: ['ok', 'unavailable'] },
      checks: { type: 'object', additionalProperties: { type: 'string' }, description: '`ok`, or why not (`degraded: …` for checks that do not fail readiness).' },
    },
  },
};

const timestamp = { type: 'string', format: 'date-time' } as const;

/** The job view of one type (`type` fixed, `result` its output), or of any type. */
export function jobViewSchema(type: JsonSchema, result: JsonSchema): JsonSchema {
  return {
    type: 'object',
    required: ['id', 'type', 'status', 'attempts', 'createdAt'],
    properties: {
      id: { type: 'string', description: 'A UUID; a fan-out chunk has its parent’s id with a suffix.' },
      type,
      status: { type: 'string', enum: ['queued', 'active', 'completed', 'failed', 'cancelled', 'expired'] },
      progress: { type: 'number', minimum: 0, maximum: 100, description: 'Percent, while running and once done.' },
      result: { ...result, description: 'Completed jobs only; absent when larger than 64 KiB as JSON: `files` then lists it as `result.json`.' },
      files: {
        type: 'array',
        description: 'The files a completed job returned (and a large result), each downloaded by its owners from `url`.',
        items: {
          type: 'object',
          required: ['name', 'bytes', 'contentType', 'sha256', 'url'],
          properties: {
            name: { type: 'string' },
            bytes: { type: 'integer', minimum: 0 },
            contentType: { type: 'string' },
            sha256: { type: 'string', pattern: '^[0-9a-f]{64}$' },
            url: { type: 'string', description: '`/v1/jobs/{id}/files/{name}`: the file, or a `303` to a short-lived presigned URL.' },
          },
        },
      },
      error: { ...schemaRef('JobFailure'), description: 'Failed, cancelled and expired jobs only.' },
      cached: { type: 'boolean', description: 'Served from the result cache.' },
      tags: { type: 'array', items: { type: 'string' }, description: 'The tags the caller gave the job (`Job-Tags`); absent without any.' },
      replayedAs: { type: 'string', description: 'The job a replay of this failed one submitted (`POST /admin/dead-letters/replay`); absent until then.' },
      attempts: { type: 'integer', minimum: 0 },
      createdAt: timestamp,
      startedAt: timestamp,
      finishedAt: timestamp,
    },
  };
}
