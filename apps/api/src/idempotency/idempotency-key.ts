import { createHash } from 'node:crypto';
import { ApiError } from '../http/api-error';

const MAX_LENGTH = 255;
/** A Structured Field string (RFC 8941 §3.3.3): printable ASCII in quotes, `\"` and `\\` escaped. */
const SF_STRING = /^"((?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\["\\])*)"$/;
/** A bare key, as many clients send it: visible ASCII without quotes, commas or backslashes. */
const BARE = /^[\x21\x23-\x2b\x2d-\x5b\x5d-\x7e]+$/;

/**
 * The key of an `Idempotency-Key` header (draft-ietf-httpapi-idempotency-key-header): a Structured
 * Field string such as `"8e03978e-40d5-43e8-bc93-6894a57f9324"`, or the same without quotes.
 * undefined without the header; a 400 problem for an empty, overlong, repeated or malformed one.
 */
export function parseIdempotencyKey(header: string | string[] | undefined): string | undefined {
  if (header === undefined) return undefined;
  const value = (Array.isArray(header) ? header.join(', ') : header).trim();
  const quoted = SF_STRING.exec(value);
  const key = quoted ? quoted[1].replace(/\\(["\\])/g, '$1') : BARE.test(value) ? value : undefined;
  if (key === undefined || key.length === 0 || key.length > MAX_LENGTH) {
    throw new ApiError(
      'INVALID_IDEMPOTENCY_KEY',
      `Idempotency-Key must be one quoted string of 1-${MAX_LENGTH} printable ASCII characters, e.g. Idempotency-Key: "8e03978e-40d5-43e8-bc93-6894a57f9324"`,
    );
  }
  return key;
}

/**
 * The fingerprint of a request (its route and its validated body): a retry under the same key must
 * have the same one. why the canonical input rather than the raw bytes: a client that re-serializes
 * the same body with its keys in another order is still retrying the same request.
 */
export function requestFingerprint(parts: readonly string[]): string {
  const hash = createHash('sha256');
  for (const part of parts) hash.update(`${part.length}:${part}`);
  return hash.digest('base64url');
}

/** Where the record of `key` lives for callers of `scope`, hashed: neither is kept in clear. */
export function recordDigest(scope: string, key: string): string {
  return createHash('sha256').update(`${scope}\n${key}`).digest('base64url');
}
