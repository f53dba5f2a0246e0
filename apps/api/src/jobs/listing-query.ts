import { ApiError } from '../http/api-error';
import { checkTag } from './job-tags';
import type { ListingQuery } from './job-listing';
import type { JobStatus } from './job-view';

/** Where a page ends: the last entry's score (epoch ms) and id; the next page starts strictly after it. */
export interface ListCursor {
  score: number;
  id: string;
}

export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 100;
const STATUSES: readonly JobStatus[] = ['queued', 'active', 'completed', 'failed', 'cancelled', 'expired'];
const CURSOR = /^(\d{1,16}):([\w:.-]{1,200})$/;
const TYPE = /^[a-z][a-z0-9-]{0,62}$/;

/** The opaque `next` of a page: base64url of `<score>:<id>`. */
export const encodeCursor = (cursor: ListCursor): string => Buffer.from(`${cursor.score}:${cursor.id}`).toString('base64url');

/**
 * Reads GET /v1/jobs's query (`type`, `status`, `tag`, `since`, `until` as ISO 8601, `limit`,
 * `cursor`): a 400 INVALID_QUERY problem naming the parameter for anything else. `scope` is whose
 * jobs to list (undefined: every caller's).
 */
export function parseListingQuery(raw: Record<string, unknown>, scope: string | undefined): ListingQuery {
  const one = (name: string): string | undefined => {
    const value = raw[name];
    if (value === undefined) return undefined;
    if (typeof value !== 'string') throw invalid(name, 'give it once');
    return value;
  };
  const query: ListingQuery = { scope, limit: DEFAULT_LIMIT };
  const type = one('type');
  if (type !== undefined) {
    if (!TYPE.test(type)) throw invalid('type', `"${type}" is not a job type name`);
    query.type = type;
  }
  const status = one('status');
  if (status !== undefined) {
    if (!(STATUSES as readonly string[]).includes(status)) throw invalid('status', `one of ${STATUSES.join(', ')}`);
    query.status = status as JobStatus;
  }
  const tag = one('tag');
  if (tag !== undefined) {
    checkTag(tag, 'tag');
    query.tag = tag;
  }
  for (const name of ['since', 'until'] as const) {
    const text = one(name);
    if (text === undefined) continue;
    const ms = /^\d{4}-\d{2}-\d{2}(T[\d:.]+(Z|[+-]\d{2}:\d{2})?)?$/.test(text) ? Date.parse(text) : NaN;
    if (Number.isNaN(ms)) throw invalid(name, `"${text}" is not an ISO 8601 time, e.g. 2026-11-27T18:00:00Z`);
    query[name] = ms;
  }
  if (query.since !== undefined && query.until !== undefined && query.since > query.until) throw invalid('since', 'is after until');
  const limit = one('limit');
  if (limit !== undefined) {
    const n = /^\d{1,4}$/.test(limit) ? Number(limit) : NaN;
    if (!(n >= 1 && n <= MAX_LIMIT)) throw invalid('limit', `a whole number from 1 to ${MAX_LIMIT}`);
    query.limit = n;
  }
  const cursor = one('cursor');
  if (cursor !== undefined) {
    const match = CURSOR.exec(Buffer.from(cursor, 'base64url').toString());
    if (!match || encodeCursor({ score: Number(match[1]), id: match[2] }) !== cursor) throw invalid('cursor', 'pass a `next` of a previous page as it is');
    query.cursor = { score: Number(match[1]), id: match[2] };
  }
  return query;
}

const invalid = (name: string, detail: string) => new ApiError('INVALID_QUERY', `${name}: ${detail}`);
