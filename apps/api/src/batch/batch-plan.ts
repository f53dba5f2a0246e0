import { z } from 'zod';
import { ApiError } from '../http/api-error';
import type { PreparedJob } from '../jobs/job-input';

/** The items of a batch body, `{"items": [input, …]}` with 1 to `max` items; else INVALID_INPUT. */
export function batchItems(body: unknown, max: number): unknown[] {
  const parsed = z.strictObject({ items: z.array(z.unknown()).min(1).max(max) }).safeParse(body);
  if (parsed.success) return parsed.data.items;
  const errors = parsed.error.issues.slice(0, 5).map((issue) => ({ field: issue.path.map(String).join('.'), message: issue.message }));
  throw new ApiError('INVALID_INPUT', `A batch is {"items": [input, …]} with 1 to ${max} inputs`, { errors });
}

/** One piece of distinct work in a batch, and the items that asked for it. */
export interface WorkGroup {
  job: PreparedJob;
  /** Indexes of the items with this content key, in order; the first one names the group. */
  items: number[];
}

/**
 * Groups a batch's valid items by content key, in the order of their first occurrence: identical
 * items become one job. `admitted` items (the first ones; the rest are over the rate limit) take
 * part; invalid items (ApiErrors) are left to answer for themselves.
 */
export function groupWork(items: ReadonlyArray<PreparedJob | ApiError>, admitted: number): WorkGroup[] {
  const byKey = new Map<string, WorkGroup>();
  items.slice(0, admitted).forEach((item, index) => {
    if (item instanceof ApiError) return;
    const group = byKey.get(item.key);
    if (group) group.items.push(index);
    else byKey.set(item.key, { job: item, items: [index] });
  });
  return [...byKey.values()];
}
