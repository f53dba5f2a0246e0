import { ApiError } from '../http/api-error';

/** How many tags one submission may give its jobs. */
export const MAX_TAGS = 10;
/** The longest tag, in characters. */
export const MAX_TAG_LENGTH = 64;
/** A tag: letters, digits and `_ . : / -`, starting with a letter or digit (`order:42`, `export`). */
export const TAG = /^[A-Za-z0-9][A-Za-z0-9_.:/-]*$/;

/**
 * Reads `Job-Tags: order:42, export` (docs/api.md#listing-jobs): the distinct tags in order, or
 * undefined without the header; a 400 problem for more than MAX_TAGS, a tag longer than
 * MAX_TAG_LENGTH, one with other characters, or an empty one. why so strict: a tag names a Redis key
 * (its index) and goes back in URLs (`?tag=`), so it is kept to what needs no escaping anywhere.
 * With `listing` false (JOB_LISTING=off) any tag is a 400: tags live in the listing index, and
 * dropped in silence a client would look for them in vain.
 */
export function parseJobTags(header: string | string[] | undefined, listing = true): string[] | undefined {
  if (header === undefined) return undefined;
  if (!listing) throw new ApiError('INVALID_HEADER', 'Job-Tags: this service keeps no job listing (JOB_LISTING=off), so no tags; submit without Job-Tags');
  const text = Array.isArray(header) ? header.join(',') : header;
  const tags = [...new Set(text.split(',').map((tag) => tag.trim()))];
  if (tags.length > MAX_TAGS) throw invalid(`at most ${MAX_TAGS} tags, got ${tags.length}`);
  for (const tag of tags) checkTag(tag, 'Job-Tags');
  return tags;
}

/** Throws a 400 problem unless `tag` is a valid tag; `where` names the header or parameter it came in. */
export function checkTag(tag: string, where: string): void {
  if (tag.length === 0) throw invalid('an empty tag', where);
  if (tag.length > MAX_TAG_LENGTH) throw invalid(`a tag of ${tag.length} characters (at most ${MAX_TAG_LENGTH})`, where);
  if (!TAG.test(tag)) throw invalid(`"${tag}": a tag is letters, digits and _ . : / - (starting with a letter or digit)`, where);
}

const invalid = (what: string, where = 'Job-Tags') =>
  new ApiError(where === 'Job-Tags' ? 'INVALID_HEADER' : 'INVALID_QUERY', `${where}: ${what}; e.g. "Job-Tags: order:42, export"`);
