/** An inclusive byte range of a file. */
export interface ByteRange {
  start: number;
  end: number;
}

/**
 * The range a `Range` header asks of a file of `size` bytes (RFC 9110 §14.1.2): `bytes=a-b`,
 * `bytes=a-` or a suffix `bytes=-n`, clamped to the file. Undefined for no header, another unit or
 * more than one range (the whole file is then the answer, as the RFC allows); `unsatisfiable` when
 * it starts past the end (416).
 */
export function parseRange(header: string | undefined, size: number): ByteRange | 'unsatisfiable' | undefined {
  const match = header && /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!match) return undefined;
  const [, first, last] = match;
  if (first === '') {
    if (last === '') return undefined;
    const suffix = Number(last);
    if (suffix === 0 || size === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(first);
  const end = last === '' ? Infinity : Number(last);
  if (end < start) return undefined;
  if (start >= size) return 'unsatisfiable';
  return { start, end: Math.min(end, size - 1) };
}

/** Whether an `If-None-Match` (or `If-Range`) header names `etag`, weakly compared as RFC 9110 wants for If-None-Match. */
export function matchesEtag(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  if (header.trim() === '*') return true;
  return header.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag);
}
