import { parseRetryAfter } from './retry';

/** One invalid field of a `400 INVALID_INPUT`. */
export interface FieldError {
  /** Path of the bad field, e.g. `n` or `numbers.3`; empty for the body itself. */
  field: string;
  message: string;
}

/**
 * An error answer of the API: its application/problem+json body (RFC 9457) as a typed error. Test
 * `code`, which is stable (`INVALID_INPUT`, `JOB_NOT_FOUND`, `RATE_LIMITED`, …), not `message`.
 */
export class ProblemError extends Error {
  override readonly name = 'ProblemError';

  constructor(
    readonly status: number,
    /** The API's stable code; `HTTP_<status>` when the answer was not problem+json (e.g. from a proxy). */
    readonly code: string,
    readonly detail: string,
    /** The invalid fields of a `400 INVALID_INPUT`; empty otherwise. */
    readonly errors: readonly FieldError[] = [],
    /** Seconds the API asked to wait before retrying (`Retry-After` of a 429 or 503). */
    readonly retryAfterSeconds?: number,
    /** The `x-request-id` of the answer: it is on the API's log lines for that request. */
    readonly requestId?: string,
  ) {
    super(`${status} ${code}: ${detail}`);
  }

  /** Reads an error response (its body is consumed). */
  static async fromResponse(res: Response): Promise<ProblemError> {
    const text = await res.text().catch(() => '');
    const retryAfterMs = parseRetryAfter(res.headers.get('retry-after'));
    const retryAfterSeconds = retryAfterMs === undefined ? undefined : Math.ceil(retryAfterMs / 1000);
    const requestId = res.headers.get('x-request-id') ?? undefined;
    const body = parseObject(text);
    if (typeof body?.code === 'string') {
      const errors = Array.isArray(body.errors) ? (body.errors as FieldError[]) : [];
      const detail = typeof body.detail === 'string' ? body.detail : String(body.title ?? res.statusText);
      return new ProblemError(res.status, body.code, detail, errors, retryAfterSeconds, requestId);
    }
    return new ProblemError(res.status, `HTTP_${res.status}`, text.slice(0, 200) || res.statusText, [], retryAfterSeconds, requestId);
  }
}

function parseObject(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
