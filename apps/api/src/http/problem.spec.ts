import { NotFoundException } from '@nestjs/common';
import { ApiError } from './api-error';
import { toProblem } from './problem';

describe('toProblem', () => {
  it('renders an ApiError with its status, code, field errors and Retry-After', () => {
    const p = toProblem(new ApiError('BACKLOG_FULL', 'busy', { retryAfterSeconds: 5 }));
    expect(p.status).toBe(503);
    expect(p.headers['retry-after']).toBe('5');
    expect(p.body).toMatchObject({ status: 503, code: 'BACKLOG_FULL', detail: 'busy', title: 'Backlog full' });
    const invalid = toProblem(new ApiError('INVALID_INPUT', 'bad', { errors: [{ field: 'n', message: 'too big' }] }));
    expect(invalid.body.errors).toEqual([{ field: 'n', message: 'too big' }]);
  });

  it('maps Fastify body errors', () => {
    const tooLarge = Object.assign(new Error('Request body is too large'), { code: 'FST_ERR_CTP_BODY_TOO_LARGE', statusCode: 413 });
    expect(toProblem(tooLarge).status).toBe(413);
    const media = Object.assign(new Error('Unsupported Media Type'), { code: 'FST_ERR_CTP_INVALID_MEDIA_TYPE', statusCode: 415 });
    expect(toProblem(media).body.code).toBe('UNSUPPORTED_MEDIA_TYPE');
    const syntax = Object.assign(new SyntaxError('Unexpected end of JSON input'), { statusCode: 400 });
    expect(toProblem(syntax).body.code).toBe('MALFORMED_REQUEST');
  });

  it('answers 503 with Retry-After when Redis is unreachable', () => {
    const p = toProblem(new Error("Stream isn't writeable and enableOfflineQueue options is false"));
    expect(p.status).toBe(503);
    expect(p.headers['retry-after']).toBeDefined();
  });

  it.each([
    "READONLY You can't write against a read only replica.",
    'CLUSTERDOWN The cluster is down',
    'Too many Cluster redirections. Last error: Error: Connection is closed.',
    "Cluster isn't ready and enableOfflineQueue options is false",
    'TRYAGAIN Multiple keys request during rehashing of slot',
    'LOADING Redis is loading the dataset in memory',
  ])('answers 503 while a failover is in progress: %s', (message) => {
    const p = toProblem(new Error(message));
    expect(p.body.code).toBe('QUEUE_UNAVAILABLE');
    expect(p.unexpected).toBe(false);
  });

  it("answers 503 when Redis refuses a command to the service's user (NOPERM), and counts it unexpected: an operator must act", () => {
    const p = toProblem(new Error("NOPERM User default has no permissions to run the 'publish' command"));
    expect(p).toMatchObject({ status: 503, unexpected: true, body: { code: 'QUEUE_UNAVAILABLE' } });
    expect(p.headers['retry-after']).toBeDefined();
    expect(JSON.stringify(p.body)).not.toMatch(/default|publish/);
  });

  it('never leaks an unexpected error', () => {
    const p = toProblem(new TypeError('secret internals at /srv/app.js:1'));
    expect(p.status).toBe(500);
    expect(p.unexpected).toBe(true);
    expect(JSON.stringify(p.body)).not.toMatch(/secret|app\.js/);
  });

  it('maps Nest HTTP exceptions by status', () => {
    expect(toProblem(new NotFoundException()).body.code).toBe('NOT_FOUND');
  });
});
