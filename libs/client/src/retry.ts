/**
 * The answers worth another attempt, for every method. 429 and most 503s (BACKLOG_FULL,
 * SHUTTING_DOWN) come before the API did anything. A 503 QUEUE_UNAVAILABLE may follow a submission
 * Redis did take; sending it again is still safe, because an identical submission joins the job
 * already queued or running (single flight) or gets its cached result. Only a job of a type that
 * caches nothing (`cacheTtlSeconds: 0`) and that finished in between would run again.
 */
const RETRY_STATUSES: ReadonlySet<number> = new Set([429, 503]);

/** Wait before the first retry when the answer has no Retry-After; doubled each time. */
const BACKOFF_MS = 500;

export interface RetryPolicy {
  /** Attempts after the first. */
  readonly retries: number;
  /** The longest wait the client accepts; when the API asks for more, the error goes to the caller. */
  readonly maxDelayMs: number;
}

/** `Retry-After` (delay-seconds or an HTTP date) in milliseconds; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | undefined {
  if (value === null) return undefined;
  const text = value.trim();
  if (/^\d{1,9}$/.test(text)) return Number(text) * 1000;
  // An HTTP date starts with the day's name (Date.parse alone would read "-1" as a year).
  const at = /^[a-z]{3}/i.test(text) ? Date.parse(text) : NaN;
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/**
 * How long to wait before attempt `retry + 2` after an answer of `status`, or undefined to give up:
 * the status is not worth retrying, the attempts are spent, or the wait the API asks for is longer
 * than the policy allows or than the call has left. Never sooner than `Retry-After`.
 */
export function retryDelay(status: number, retryAfter: string | null, retry: number, policy: RetryPolicy, timeLeftMs: number): number | undefined {
  if (!RETRY_STATUSES.has(status) || retry >= policy.retries) return undefined;
  const delay = parseRetryAfter(retryAfter) ?? BACKOFF_MS * 2 ** retry;
  return delay <= policy.maxDelayMs && delay < timeLeftMs ? delay : undefined;
}
