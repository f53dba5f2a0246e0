import { HttpException } from '@nestjs/common';
import { API_ERRORS, ApiError, ApiErrorCode, FieldError } from './api-error';

/** An RFC 9457 problem details body, with our stable `code`. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  code: ApiErrorCode;
  detail: string;
  instance?: string;
  errors?: FieldError[];
}

export interface ProblemResponse {
  status: number;
  body: Problem;
  headers: Record<string, string>;
  /** True when the cause is ours, not the client's: logged with its stack. */
  unexpected: boolean;
}

// The second line: a Sentinel or Cluster failover in progress (a refused write, a shard without a primary).
const REDIS_DOWN = new RegExp(
  [
    "Connection is closed|Stream isn't writeable|enableOfflineQueue|Command timed out|ECONNREFUSED|ETIMEDOUT|ENOTFOUND|MaxRetriesPerRequest|Reached the max retries",
    "^(READONLY|LOADING|MASTERDOWN|CLUSTERDOWN|TRYAGAIN)|Too many Cluster redirections|Cluster isn't ready|Failed to refresh slots cache|None of startup nodes is available|All sentinels are unreachable",
  ].join('|'),
  'i',
);

/** Fastify's own request errors, by code. */
const FASTIFY_ERRORS: Record<string, ApiErrorCode> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 'PAYLOAD_TOO_LARGE',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'UNSUPPORTED_MEDIA_TYPE',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'MALFORMED_REQUEST',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'MALFORMED_REQUEST',
  FST_ERR_CTP_INVALID_TYPE: 'UNSUPPORTED_MEDIA_TYPE',
  FST_ERR_BAD_URL: 'MALFORMED_REQUEST',
  FST_ERR_MAX_PARAM_LENGTH: 'URI_TOO_LONG',
};

const BY_STATUS: Record<number, ApiErrorCode> = {
  400: 'MALFORMED_REQUEST',
  401: 'UNAUTHORIZED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  413: 'PAYLOAD_TOO_LARGE',
  414: 'URI_TOO_LONG',
  415: 'UNSUPPORTED_MEDIA_TYPE',
  429: 'RATE_LIMITED',
};

/** The problem body of `code`: its RFC 9457 fields from API_ERRORS. */
export function problemOf(code: ApiErrorCode, detail: string, errors?: FieldError[]): Problem {
  const { status, title } = API_ERRORS[code];
  const problem: Problem = { type: `urn:nest-offload:problem:${code.toLowerCase().replace(/_/g, '-')}`, title, status, code, detail };
  if (errors) problem.errors = errors;
  return problem;
}

/** Maps anything thrown while serving a request to the problem the client sees. Never leaks internals. */
export function toProblem(error: unknown): ProblemResponse {
  if (error instanceof ApiError) {
    const headers: Record<string, string> = { ...error.extras.headers };
    if (error.extras.retryAfterSeconds !== undefined) headers['retry-after'] = String(error.extras.retryAfterSeconds);
    return { status: error.status, body: problemOf(error.code, error.detail, error.extras.errors), headers, unexpected: false };
  }
  const err = error as { code?: string; statusCode?: number; message?: string; name?: string };
  const fastifyCode = err?.code ? FASTIFY_ERRORS[err.code] : undefined;
  if (fastifyCode) return toProblem(new ApiError(fastifyCode, err.message ?? API_ERRORS[fastifyCode].title));
  // JSON syntax errors and prototype-poisoning rejections from the body parser carry statusCode 400.
  if (err?.statusCode === 400 && (err.name === 'SyntaxError' || err.code?.startsWith('FST_'))) {
    const detail = /forbidden prototype property/.test(err.message ?? '')
      ? 'Body must not contain "__proto__" or "constructor.prototype" keys'
      : `Body is not valid JSON: ${err.message}`;
    return toProblem(new ApiError('MALFORMED_REQUEST', detail));
  }
  // The client hung up mid-request: its fault, and nobody is left to read the answer.
  if (err?.code === 'ECONNRESET' || err?.message === 'aborted') {
    return toProblem(new ApiError('MALFORMED_REQUEST', 'The client closed the connection before sending the whole request'));
  }
  if (error instanceof HttpException) {
    const status = error.getStatus();
    const code = BY_STATUS[status] ?? (status >= 500 ? 'INTERNAL' : 'MALFORMED_REQUEST');
    const detail = status === 404 ? 'No such route' : error.message;
    return toProblem(new ApiError(code, detail));
  }
  if (err?.message && REDIS_DOWN.test(err.message)) {
    return toProblem(new ApiError('QUEUE_UNAVAILABLE', 'Redis is unreachable; retry shortly', { retryAfterSeconds: 5 }));
  }
  // A Redis user without a command the request needs (a least-privilege ACL missing one): the
  // service cannot do this until an operator grants it, so 503 for the client, and logged as unexpected.
  if (err?.message && /^NOPERM\b/.test(err.message)) {
    return { ...toProblem(new ApiError('QUEUE_UNAVAILABLE', 'Redis refused a command this request needs; retry later', { retryAfterSeconds: 5 })), unexpected: true };
  }
  return { ...toProblem(new ApiError('INTERNAL', 'An internal error occurred')), unexpected: true };
}
