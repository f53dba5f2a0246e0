import { JobFailureCode } from '@app/jobs';
import { KEPT_CODES } from '@app/queue';
import { ApiError } from '../http/api-error';
import { type ListCursor, parseListingQuery } from '../jobs/listing-query';

/** What a listing or a replay of dead letters asks for. */
export interface DeadLetterFilter {
  type?: string;
  code?: JobFailureCode;
  /** Failed at or after / at or before (epoch ms). */
  since?: number;
  until?: number;
  limit: number;
}

export interface DeadLetterQuery extends DeadLetterFilter {
  cursor?: ListCursor;
}

export interface ReplayRequest extends DeadLetterFilter {
  dryRun: boolean;
}

export const MAX_REPLAY = 1000;
const DEFAULT_REPLAY = 100;
const CODES = [...KEPT_CODES];

const invalid = (name: string, detail: string) => new ApiError('INVALID_QUERY', `${name}: ${detail}`);

function codeOf(value: unknown): JobFailureCode | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !(CODES as string[]).includes(value)) throw invalid('code', `one of ${CODES.join(', ')}`);
  return value as JobFailureCode;
}

/**
 * GET /admin/dead-letters's query: `type`, `code`, `since`, `until` (ISO 8601, of when each failed),
 * `limit`, `cursor`, as GET /v1/jobs reads them; 400 INVALID_QUERY naming the parameter otherwise.
 */
export function parseDeadLetterQuery(raw: Record<string, unknown>): DeadLetterQuery {
  for (const name of Object.keys(raw)) if (!['type', 'code', 'since', 'until', 'limit', 'cursor'].includes(name)) throw invalid(name, 'not a filter of dead letters');
  const { type, since, until, limit, cursor } = parseListingQuery(raw, undefined);
  return { type, code: codeOf(raw.code), since, until, limit, cursor };
}

/**
 * POST /admin/dead-letters/replay's body: the same filter as JSON (`limit` a number, up to
 * MAX_REPLAY, 100 by default), and `dryRun`; 400 INVALID_QUERY naming the field otherwise.
 */
export function parseReplayRequest(body: unknown): ReplayRequest {
  if (body === undefined || body === null) body = {};
  if (typeof body !== 'object' || Array.isArray(body)) throw invalid('body', 'a JSON object: {"type", "code", "since", "until", "limit", "dryRun"}, each optional');
  const raw = body as Record<string, unknown>;
  for (const name of Object.keys(raw)) if (!['type', 'code', 'since', 'until', 'limit', 'dryRun'].includes(name)) throw invalid(name, 'not a field of a replay');
  const dryRun = raw.dryRun ?? false;
  if (typeof dryRun !== 'boolean') throw invalid('dryRun', 'true or false');
  let limit = DEFAULT_REPLAY;
  if (raw.limit !== undefined) {
    if (typeof raw.limit !== 'number' || !Number.isInteger(raw.limit) || raw.limit < 1 || raw.limit > MAX_REPLAY) throw invalid('limit', `a whole number from 1 to ${MAX_REPLAY}`);
    limit = raw.limit;
  }
  for (const name of ['type', 'since', 'until'] as const) if (raw[name] !== undefined && typeof raw[name] !== 'string') throw invalid(name, 'a string');
  const strings = Object.fromEntries((['type', 'since', 'until'] as const).filter((name) => raw[name] !== undefined).map((name) => [name, raw[name]]));
  const { type, since, until } = parseListingQuery(strings, undefined);
  return { type, code: codeOf(raw.code), since, until, limit, dryRun };
}
