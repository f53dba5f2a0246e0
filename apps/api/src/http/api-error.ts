/** Every error the HTTP API answers with: a stable code, its status and a short title. */
export const API_ERRORS = {
  INVALID_INPUT: { status: 400, title: 'Invalid input' },
  MALFORMED_REQUEST: { status: 400, title: 'Malformed request' },
  INVALID_CALLBACK_URL: { status: 400, title: 'Callback URL not allowed' },
  WEBHOOKS_DISABLED: { status: 400, title: 'Webhooks are off' },
  INVALID_IDEMPOTENCY_KEY: { status: 400, title: 'Invalid Idempotency-Key' },
  INVALID_HEADER: { status: 400, title: 'Invalid header' },
  INVALID_QUERY: { status: 400, title: 'Invalid query' },
  UNAUTHORIZED: { status: 401, title: 'Unauthorized' },
  FORBIDDEN: { status: 403, title: 'Forbidden' },
  NOT_FOUND: { status: 404, title: 'Not found' },
  UNKNOWN_JOB_TYPE: { status: 404, title: 'Unknown job type' },
  JOB_NOT_FOUND: { status: 404, title: 'Job not found' },
  LISTING_DISABLED: { status: 404, title: 'Job listing is off' },
  FILE_NOT_FOUND: { status: 404, title: 'File not found' },
  UPLOAD_NOT_FOUND: { status: 404, title: 'Upload not found' },
  JOB_ALREADY_FINISHED: { status: 409, title: 'Job already finished' },
  PAYLOAD_TOO_LARGE: { status: 413, title: 'Payload too large' },
  URI_TOO_LONG: { status: 414, title: 'URI too long' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, title: 'Unsupported media type' },
  RANGE_NOT_SATISFIABLE: { status: 416, title: 'Range not satisfiable' },
  IDEMPOTENCY_KEY_CONFLICT: { status: 422, title: 'Idempotency-Key used for another request' },
  RATE_LIMITED: { status: 429, title: 'Too many requests' },
  CALLER_BACKLOG_FULL: { status: 429, title: 'Too many jobs waiting for this caller' },
  INTERNAL: { status: 500, title: 'Internal error' },
  QUEUE_UNAVAILABLE: { status: 503, title: 'Queue unavailable' },
  BACKLOG_FULL: { status: 503, title: 'Backlog full' },
  NOT_REPLICATED: { status: 503, title: 'Not replicated' },
  BLOB_STORE_UNAVAILABLE: { status: 503, title: 'Blob store unavailable' },
  SHUTTING_DOWN: { status: 503, title: 'Shutting down' },
} as const satisfies Record<string, { status: number; title: string }>;

export type ApiErrorCode = keyof typeof API_ERRORS;

export interface FieldError {
  /** JSON pointer-ish path of the bad field, e.g. `n` or `numbers.3`; empty for the body itself. */
  field: string;
  message: string;
}

/** Thrown anywhere in the API; the problem filter turns it into application/problem+json. */
export class ApiError extends Error {
  readonly status: number;

  constructor(
    readonly code: ApiErrorCode,
    readonly detail: string,
    readonly extras: { errors?: FieldError[]; retryAfterSeconds?: number; headers?: Record<string, string> } = {},
  ) {
    super(detail);
    this.name = 'ApiError';
    this.status = API_ERRORS[code].status;
  }
}
