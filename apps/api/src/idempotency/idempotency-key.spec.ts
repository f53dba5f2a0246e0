import { ApiError } from '../http/api-error';
import { parseIdempotencyKey, recordDigest, requestFingerprint } from './idempotency-key';

describe('parseIdempotencyKey', () => {
  it.each([
    ['"8e03978e-40d5-43e8-bc93-6894a57f9324"', '8e03978e-40d5-43e8-bc93-6894a57f9324'],
    ['  "spaces inside, and a comma"  ', 'spaces inside, and a comma'],
    ['"a \\"quoted\\" \\\\ key"', 'a "quoted" \\ key'],
    ['8e03978e-40d5-43e8-bc93-6894a57f9324', '8e03978e-40d5-43e8-bc93-6894a57f9324'],
    ['order:42/retry=1', 'order:42/retry=1'],
  ])('reads %s', (header, key) => {
    expect(parseIdempotencyKey(header)).toBe(key);
  });

  it('is undefined without the header', () => {
    expect(parseIdempotencyKey(undefined)).toBeUndefined();
  });

  it.each([
    ['empty', ''],
    ['empty string', '""'],
    ['unterminated', '"abc'],
    ['two keys (a repeated header)', '"a", "b"'],
    ['two bare keys', 'a, b'],
    ['a space in a bare key', 'a b'],
    ['a control character', '"a\tb"'],
    ['non-ASCII', '"clé"'],
    ['a stray escape', '"a\\b"'],
    ['parameters', '"a";p=1'],
    ['256 characters', `"${'k'.repeat(256)}"`],
  ])('refuses %s with INVALID_IDEMPOTENCY_KEY', (_, header) => {
    expect(() => parseIdempotencyKey(header)).toThrow(ApiError);
    try {
      parseIdempotencyKey(header);
    } catch (error) {
      expect((error as ApiError).code).toBe('INVALID_IDEMPOTENCY_KEY');
      expect((error as ApiError).status).toBe(400);
    }
  });

  it('accepts 255 characters', () => {
    expect(parseIdempotencyKey(`"${'k'.repeat(255)}"`)).toHaveLength(255);
  });
});

describe('requestFingerprint', () => {
  it('tells requests apart by every part, including where one part ends', () => {
    const base = requestFingerprint(['POST /v1/jobs/resize-image', '{"n":1}']);
    expect(requestFingerprint(['POST /v1/jobs/resize-image', '{"n":1}'])).toBe(base);
    expect(requestFingerprint(['POST /v1/jobs/resize-image', '{"n":2}'])).not.toBe(base);
    expect(requestFingerprint(['POST /v1/jobs/resize-image/batch', '{"n":1}'])).not.toBe(base);
    expect(requestFingerprint(['ab', 'c'])).not.toBe(requestFingerprint(['a', 'bc']));
  });
});

describe('recordDigest', () => {
  it('scopes a key to its caller', () => {
    expect(recordDigest('key:web', 'k')).toBe(recordDigest('key:web', 'k'));
    expect(recordDigest('key:web', 'k')).not.toBe(recordDigest('key:batch', 'k'));
  });
});
