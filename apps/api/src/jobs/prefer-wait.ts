/**
 * Reads the `wait` preference (RFC 7240) from a Prefer header: how many seconds the client is
 * willing to wait for a result. Malformed, negative or missing values mean "don't wait"; large
 * ones are capped at `max`.
 */
export function parsePreferWait(header: string | string[] | undefined, max: number): number {
  const value = Array.isArray(header) ? header.join(',') : header;
  if (!value || value.length > 1024) return 0;
  for (const preference of value.split(/[,;]/)) {
    const match = /^\s*wait\s*=\s*"?(\d{1,9})"?\s*$/i.exec(preference);
    if (match) return Math.min(Number(match[1]), max);
  }
  return 0;
}
