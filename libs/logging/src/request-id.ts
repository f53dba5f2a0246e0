import { randomUUID } from 'node:crypto';

// why: the id is echoed in a header and written into logs, so only a short, plain token is trusted.
const SAFE_ID = /^[\w.:-]{1,128}$/;

/** The caller's `x-request-id` when it is a plain token, a fresh UUID otherwise. */
export function requestIdFrom(header: string | string[] | undefined): string {
  const value = Array.isArray(header) ? header[0] : header;
  return value && SAFE_ID.test(value) ? value : randomUUID();
}
