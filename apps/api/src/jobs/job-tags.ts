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
 */
export function parseJobTags(header: string | string[] | undefined): string[] | undefined {
  if (header === undefined) return undefined;
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
