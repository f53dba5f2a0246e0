import { MAX_START_WITHIN_MS } from '@app/jobs';
import { ApiError } from '../http/api-error';

const SECONDS = /^\s*(\d{1,9})(?:\.(\d{1,3}))?\s*$/;

/**
 * Reads `Start-Within: <seconds>` (a start deadline: docs/api.md#start-deadlines) as milliseconds:
 * undefined without the header (the type's `startWithinMs` applies), capped at a week, a 400
 * problem unless it is a positive number of seconds with at most millisecond precision.
 */
export function parseStartWithin(header: string | string[] | undefined): number | undefined {
  if (header === undefined) return undefined;
  const match = Array.isArray(header) ? null : SECONDS.exec(header);
  const ms = match ? Number(match[1]) * 1000 + Number((match[2] ?? '').padEnd(3, '0')) : 0;
  if (ms <= 0) throw new ApiError('INVALID_HEADER', 'Start-Within must be a positive number of seconds, e.g. "Start-Within: 30" or "Start-Within: 2.5"');
  return Math.min(ms, MAX_START_WITHIN_MS);
}
