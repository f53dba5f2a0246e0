import type { JobView } from '../jobs/job-view';

/**
 * Largest body sent with the job's result in it. why: the Standard Webhooks reference library signs
 * with a pure-JavaScript SHA-256 on the API's event loop (about 4 ms for 64 KiB, 35 ms for 1 MB
 * measured here), and the specification recommends small payloads; a larger result is left out
 * and read with GET /v1/jobs/{id}.
 */
export const INLINE_BODY_MAX = 64 * 1024;

/**
 * The body of the callback for a finished job, in the Standard Webhooks shape: `type`
 * (`job.completed`, `job.failed` or `job.cancelled`), `timestamp` (when the job finished) and
 * `data` (its final view), plus `caller`: the name of the API key that asked for the callback, so a
 * receiver shared by several keys knows whose job it is (signed with the rest; absent without keys).
 * `resultOmitted: true` when the result did not fit.
 */
export function webhookBody(view: JobView, caller?: string): string {
  const envelope = { type: `job.${view.status}`, timestamp: view.finishedAt ?? new Date().toISOString(), ...(caller === undefined ? {} : { caller }), data: view };
  const body = JSON.stringify(envelope);
  if (Buffer.byteLength(body) <= INLINE_BODY_MAX) return body;
  const { result: _omitted, ...rest } = view;
  return JSON.stringify({ ...envelope, data: rest, resultOmitted: true });
}
