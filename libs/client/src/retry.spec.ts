import { ProblemError } from './problem-error';
import { parseRetryAfter, retryDelay } from './retry';

const policy = { retries: 2, maxDelayMs: 30_000 };

describe('client retries', () => {
  it('reads Retry-After as seconds or an HTTP date', () => {
    const now = Date.parse('2026-11-22T10:00:00Z');
    expect(parseRetryAfter('5', now)).toBe(5000);
    expect(parseRetryAfter(' 0 ', now)).toBe(0);
    expect(parseRetryAfter('Sun, 22 Nov 2026 10:00:07 GMT', now)).toBe(7000);
    expect(parseRetryAfter('Sun, 22 Nov 2026 09:59:00 GMT', now)).toBe(0);
    expect(parseRetryAfter(null, now)).toBeUndefined();
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter('-1', now)).toBeUndefined();
  });

  it('retries 429 and 503 after their Retry-After, a bounded number of times', () => {
    expect(retryDelay(429, '1', 0, policy, 10_000)).toBe(1000);
    expect(retryDelay(503, '5', 1, policy, 10_000)).toBe(5000);
    expect(retryDelay(503, '5', 2, policy, 10_000)).toBeUndefined();
    expect(retryDelay(503, null, 0, policy, 10_000)).toBe(500);
    expect(retryDelay(503, null, 1, policy, 10_000)).toBe(1000);
  });

  it('never retries other answers', () => {
    for (const status of [400, 401, 404, 409, 413, 500, 502, 504]) expect(retryDelay(status, '1', 0, policy, 10_000)).toBeUndefined();
  });

  it('gives up rather than retry sooner than asked: a wait past the policy or past the time left', () => {
    expect(retryDelay(503, '60', 0, policy, Infinity)).toBeUndefined();
    expect(retryDelay(429, '5', 0, policy, 4_000)).toBeUndefined();
  });
});

describe('ProblemError.fromResponse', () => {
  it('reads a problem+json answer', async () => {
    const res = new Response(
      JSON.stringify({ type: 'urn:x', title: 'Invalid input', status: 400, code: 'INVALID_INPUT', detail: 'Input is invalid', errors: [{ field: 'n', message: 'Too big' }] }),
      { status: 400, headers: { 'content-type': 'application/problem+json', 'x-request-id': 'r1' } },
    );
    const error = await ProblemError.fromResponse(res);
    expect(error).toBeInstanceOf(ProblemError);
    expect(error).toMatchObject({ status: 400, code: 'INVALID_INPUT', detail: 'Input is invalid', errors: [{ field: 'n', message: 'Too big' }], requestId: 'r1' });
    expect(error.message).toBe('400 INVALID_INPUT: Input is invalid');
  });

  it('reads Retry-After, and answers that are not problem+json', async () => {
    const limited = await ProblemError.fromResponse(new Response('{"code":"RATE_LIMITED","detail":"slow down"}', { status: 429, headers: { 'retry-after': '3' } }));
    expect(limited).toMatchObject({ code: 'RATE_LIMITED', retryAfterSeconds: 3, errors: [] });
    const proxy = await ProblemError.fromResponse(new Response('<html>Bad gateway</html>', { status: 502 }));
    expect(proxy).toMatchObject({ status: 502, code: 'HTTP_502', detail: '<html>Bad gateway</html>' });
  });
});
