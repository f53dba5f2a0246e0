import { applyDecorators } from '@nestjs/common';
import { ApiHeader, ApiResponse } from './openapi.recorder';
import { API_ERRORS, ApiErrorCode } from './api-error';
import { problemOf } from './problem';
import { schemaRef } from './openapi.refs';

const RETRY_AFTER = { 'Retry-After': { description: 'Seconds to wait before retrying.', schema: { type: 'integer', minimum: 1 } } };

/**
 * The problem+json answers an operation can give, by code: one response per status, with an
 * example per code. Routes under /v1 get UNAUTHORIZED and RATE_LIMITED from the document builder.
 */
export function ApiProblems(...codes: ApiErrorCode[]): MethodDecorator & ClassDecorator {
  const byStatus = new Map<number, ApiErrorCode[]>();
  for (const code of codes) byStatus.set(API_ERRORS[code].status, [...(byStatus.get(API_ERRORS[code].status) ?? []), code]);
  return applyDecorators(...[...byStatus].map(([status, group]) => ApiResponse(problemResponse(status, group))));
}

/** The OpenAPI response object of problems with `codes`, all of one `status`. */
export function problemResponse(status: number, codes: ApiErrorCode[]) {
  return {
    status,
    description: codes.map((code) => `\`${code}\`: ${API_ERRORS[code].title}`).join('; '),
    headers: status === 429 || status === 503 ? RETRY_AFTER : undefined,
    content: {
      'application/problem+json': {
        schema: schemaRef('Problem'),
        examples: Object.fromEntries(codes.map((code) => [code, { summary: API_ERRORS[code].title, value: problemOf(code, `${API_ERRORS[code].title} (example)`) }])),
      },
    },
  };
}

/** `Prefer: wait=N` (RFC 7240): wait up to N seconds for the job to finish. */
const ApiPreferWait = (): MethodDecorator & ClassDecorator =>
  ApiHeader({
    name: 'Prefer',
    required: false,
    description: '`wait=N`: wait up to N seconds (capped by `MAX_WAIT_SECONDS`) and answer `200` with the finished view if it finished in time.',
    schema: { type: 'string' },
    example: 'wait=10',
  });

/** `Idempotency-Key` (IETF httpapi draft): a retry with the same key and body gets the same job. */
const ApiIdempotencyKey = (): MethodDecorator & ClassDecorator =>
  ApiHeader({
    name: 'Idempotency-Key',
    required: false,
    description:
      'A retry with the same key and the same body gets the same job, from any replica, for `IDEMPOTENCY_TTL_SECONDS`; the same key with another body is `422`. Scoped to the caller\'s API key. 1–255 characters, bare or as a quoted string, e.g. `"5f3a1c2e-order-1234"`.',
    // why no `example`: Swagger UI would send it with every "Try it out", reusing one key.
    schema: { type: 'string', minLength: 1, maxLength: 257 },
  });

/** `Callback-Url`: one signed POST (Standard Webhooks) to that URL when the job finishes. */
const ApiCallbackUrl = (): MethodDecorator & ClassDecorator =>
  ApiHeader({
    name: 'Callback-Url',
    required: false,
    description:
      'When the job finishes (completed, failed, cancelled or expired) its final view is POSTed there, signed per Standard Webhooks (`webhook-id`, `webhook-timestamp`, `webhook-signature`), at least once. The host must be in `WEBHOOK_ALLOWED_HOSTS`. E.g. `https://hooks.example.com/jobs`.',
    // why no `example`: Swagger UI would send it with every "Try it out" (a 400 where webhooks are off).
    schema: { type: 'string', format: 'uri' },
  });

/** `Start-Within: <seconds>`: a start deadline (docs/api.md#start-deadlines). */
const ApiStartWithin = (): MethodDecorator & ClassDecorator =>
  ApiHeader({
    name: 'Start-Within',
    required: false,
    description:
      'A start deadline, in seconds (to the millisecond, capped at a week): a job still queued that long after its submission never runs and ends `expired`. Overrides the type\'s `startWithinMs`. A submission that joins an identical job keeps it alive until its own deadline.',
    schema: { type: 'string', pattern: '^\\d{1,9}(\\.\\d{1,3})?$' },
  });

/** `Job-Tags: order:42, export`: the caller's tags for the job (docs/api.md#listing-jobs). */
const ApiJobTags = (): MethodDecorator & ClassDecorator =>
  ApiHeader({
    name: 'Job-Tags',
    required: false,
    description:
      'Up to 10 comma-separated tags of up to 64 characters each (letters, digits and `_ . : / -`, starting with a letter or digit) that the job view shows and `GET /v1/jobs?tag=` filters on. Each caller\'s own: a caller that joins an identical job tags it for itself.',
    schema: { type: 'string', maxLength: 1000 },
    example: 'order:42, export',
  });

/**
 * What a request that submits work (one job, or a batch) may be refused with as a whole. A batch
 * answers over-the-backlog items one by one (see BatchService), a single job as the whole request.
 */
const SUBMISSION_PROBLEMS: readonly ApiErrorCode[] = [
  'INVALID_INPUT',
  'MALFORMED_REQUEST',
  'UNKNOWN_JOB_TYPE',
  'INVALID_IDEMPOTENCY_KEY',
  'IDEMPOTENCY_KEY_CONFLICT',
  'INVALID_CALLBACK_URL',
  'INVALID_HEADER',
  'WEBHOOKS_DISABLED',
  'PAYLOAD_TOO_LARGE',
  'UNSUPPORTED_MEDIA_TYPE',
  'QUEUE_UNAVAILABLE',
  'NOT_REPLICATED',
  'SHUTTING_DOWN',
];

/**
 * The request headers and problems every submission route shares (POST /v1/jobs/{type} and its
 * batch), so the two cannot drift apart; `also` adds the route's own problems.
 */
export const ApiSubmission = (...also: ApiErrorCode[]): MethodDecorator & ClassDecorator =>
  applyDecorators(ApiPreferWait(), ApiIdempotencyKey(), ApiCallbackUrl(), ApiStartWithin(), ApiJobTags(), ApiProblems(...SUBMISSION_PROBLEMS, ...also));
