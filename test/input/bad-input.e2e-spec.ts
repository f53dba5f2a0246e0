import { AppProcess, startStack, stackEnv } from '../support/apps';
import { request, type Reply } from '../support/http';
import { Ledger } from '../support/ledger';
import { rawRequest } from '../support/raw-http';

/**
 * Bad input beyond the single cases of test/validation.e2e-spec.ts: variants of malformed JSON and
 * UTF-8, media types, prototype keys, bodies near and over the limit, deep nesting, ids of every
 * shape on every id route, absurd `Prefer: wait`, and requests fetch would never send. Every answer
 * is a 4xx problem (or a 2xx for what is valid after all); the API stays up and logs no error.
 */
describe('bad input', () => {
  const BODY_LIMIT = 1024 * 1024;
  const MAX_WAIT_SECONDS = 2;
  let api: AppProcess;
  let worker: AppProcess;
  let stop: () => Promise<void>;
  const tried = { requests: 0 };

  beforeAll(async () => {
    ({ api, worker, stop } = await startStack(
      stackEnv('input-bad', { BODY_LIMIT: '1mb', MAX_WAIT_SECONDS: String(MAX_WAIT_SECONDS), JOB_TIMEOUT_MS: '5000' }),
    ));
  });
  afterAll(async () => {
    console.log(`[bad-input] ${tried.requests} bad or edge-case requests sent`);
    await stop();
  });

  const send = async (path: string, init: RequestInit = {}): Promise<Reply> => {
    tried.requests++;
    return request(`${api.url}${path}`, { ...init, signal: AbortSignal.timeout(10_000) });
  };
  const post = (type: string, body: string | Buffer, contentType = 'application/json') =>
    send(`/v1/jobs/${type}`, { method: 'POST', body: typeof body === 'string' ? body : new Uint8Array(body), headers: { 'content-type': contentType } });

  const expectProblem = (res: Reply, status: number, code?: string) => {
    expect(res.status).toBe(status);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(res.body).toMatchObject({ status, code: code ?? expect.any(String), detail: expect.any(String) });
    expect(JSON.stringify(res.body)).not.toMatch(/at .*\.js:\d+|node_modules/); // no stack traces
  };

  describe('malformed JSON', () => {
    it.each([
      ['a trailing comma', '{"n":1,}'],
      ['single quotes', "{'n':1}"],
      ['NaN', '{"n":NaN}'],
      ['Infinity', '{"n":Infinity}'],
      ['a comment', '{"n":1 /* two */}'],
      ['two documents', '{"n":1}{"n":2}'],
      ['trailing garbage', '{"n":1} x'],
      ['an unterminated string', '{"n":"1'],
      ['a raw control character in a string', '{"n":1,"x":"a\u0001b"}'],
      ['a lone brace', '}'],
      ['whitespace only', '  \n\t '],
      ['a hex number', '{"n":0x10}'],
      ['a leading zero', '{"n":010}'],
      ['an unquoted key', '{n:1}'],
    ])('answers 400 to %s', async (_, body) => {
      expectProblem(await post('fibonacci', body), 400, 'MALFORMED_REQUEST');
    });

    it.each([
      ['null', 'null'],
      ['true', 'true'],
      ['a number', '5'],
    ])('answers 400 to a body that is valid JSON but %s', async (_, body) => {
      const res = await post('fibonacci', body);
      expect(res.status).toBe(400);
      expectProblem(res, 400);
    });
  });

  describe('invalid UTF-8', () => {
    const inString = (bytes: number[]) => Buffer.concat([Buffer.from('{"text":"a'), Buffer.from(bytes), Buffer.from('","n":1}')]);
    it.each([
      ['an overlong "/"', [0xc0, 0xaf]],
      ['an overlong NUL', [0xc0, 0x80]],
      ['a UTF-16 surrogate encoded in UTF-8', [0xed, 0xa0, 0x80]],
      ['a truncated 3-byte sequence', [0xe2, 0x82]],
      ['a lone continuation byte', [0x80]],
      ['0xFF', [0xff]],
      ['0xFE 0xFF', [0xfe, 0xff]],
      ['a code point above U+10FFFF', [0xf4, 0x90, 0x80, 0x80]],
    ])('answers 400 to %s', async (_, bytes) => {
      expectProblem(await post('echo', inString(bytes)), 400, 'MALFORMED_REQUEST');
    });

    it('answers 400 to invalid UTF-8 in a key', async () => {
      expectProblem(await post('fibonacci', Buffer.concat([Buffer.from('{"'), Buffer.from([0xff]), Buffer.from('":1}')])), 400, 'MALFORMED_REQUEST');
    });

    it('answers 400 to a UTF-16 body declared as such', async () => {
      expectProblem(await post('fibonacci', Buffer.from('{"n":3}', 'utf16le'), 'application/json; charset=utf-16'), 400);
    });

    it('answers 400 to invalid percent-encoding in the path', async () => {
      for (const path of ['/v1/jobs/%FF', '/v1/jobs/%C3%28', '/v1/jobs/%ED%A0%80/events', '/v1/jobs/%E2%82']) {
        expectProblem(await send(path), 400, 'MALFORMED_REQUEST');
        expectProblem(await send(path, { method: 'DELETE' }), 400, 'MALFORMED_REQUEST');
      }
    });
  });

  describe('media types', () => {
    it.each(['application/jsonx', 'application/xml', 'multipart/form-data; boundary=x', 'text/json', 'json', 'application/*', '*/*', ';;;'])(
      'answers 415 to %s',
      async (type) => {
        expectProblem(await post('fibonacci', '{"n":3}', type), 415, 'UNSUPPORTED_MEDIA_TYPE');
      },
    );
  });

  describe('prototype keys', () => {
    it.each([
      ['__proto__ inside an array element', '{"numbers":[{"__proto__":{"polluted":1}}]}'],
      ['__proto__ written with unicode escapes', '{"numbers":[1],"\\u005f_proto__":{"polluted":1}}'],
      ['__proto__ fully escaped', '{"numbers":[1],"\\u005f\\u005f\\u0070\\u0072\\u006f\\u0074\\u006f\\u005f\\u005f":{"polluted":1}}'],
      ['constructor.prototype nested deep', `{"numbers":[1],"a":${'{"b":'.repeat(50)}{"constructor":{"prototype":{"polluted":1}}}${'}'.repeat(50)}}`],
    ])('rejects %s', async (_, body) => {
      expectProblem(await post('echo', body), 400);
    });

    it.each([
      ['constructor', '{"n":1,"constructor":1}'],
      ['toString', '{"n":1,"toString":1}'],
      ['hasOwnProperty', '{"n":1,"hasOwnProperty":{}}'],
      ['prototype', '{"n":1,"prototype":{}}'],
    ])('names %s as an unknown field', async (_, body) => {
      const res = await post('fibonacci', body);
      expectProblem(res, 400, 'INVALID_INPUT');
    });

    it('accepts "__proto__" and "constructor" as plain string values', async () => {
      const ledger = new Ledger('prototype-like values');
      for (const text of ['__proto__', 'constructor', '{"__proto__":{}}']) {
        const res = await ledger.submit(api.url, 'echo', { text });
        expect(res.status).toBe(202);
      }
      const summary = await ledger.check(api.url, [worker], { timeoutMs: 15_000 });
      expect(summary.lost).toBe(0);
      expect(summary.completed).toBe(3);
    });
  });

  describe('wrong types and out-of-range numbers', () => {
    it.each([
      ['fibonacci', '{"n":true}', 'n'],
      ['fibonacci', '{"n":[5]}', 'n'],
      ['fibonacci', '{"n":{"value":5}}', 'n'],
      ['fibonacci', '{"n":""}', 'n'],
      ['fibonacci', '{"n":1e400}', 'n'],
      ['fibonacci', '{"n":-1e400}', 'n'],
      ['fibonacci', '{"n":5e-324}', 'n'],
      ['fibonacci', '{"n":50.000001}', 'n'],
      ['echo', '{"n":9007199254740993}', 'n'],
      ['echo', '{"n":-9007199254740993}', 'n'],
      ['echo', '{"n":"1e3"}', 'n'],
      ['echo', '{"n":1000000000001}', 'n'],
      ['echo', '{"text":1}', 'text'],
      ['echo', '{"text":["s"]}', 'text'],
      ['echo', `{"text":"${'x'.repeat(1025)}"}`, 'text'],
      ['echo', '{"choice":"A"}', 'choice'],
      ['echo', '{"numbers":{"0":1,"length":1}}', 'numbers'],
      ['echo', '{"numbers":null}', 'numbers'],
      ['echo', '{"numbers":[1,null,3]}', 'numbers.1'],
      ['echo', '{"numbers":[1,1e400]}', 'numbers.1'],
      ['echo', '{"numbers":[1,true]}', 'numbers.1'],
    ])('%s rejects %s', async (type, body, field) => {
      const res = await post(type, body);
      expectProblem(res, 400, 'INVALID_INPUT');
      expect(res.body.errors.map((e: { field: string }) => e.field)).toContain(field);
    });

    it('caps the error list and never echoes a huge input back', async () => {
      const numbers = Array.from({ length: 5000 }, (_, i) => `x${i}`);
      const res = await post('echo', JSON.stringify({ numbers }));
      expectProblem(res, 400, 'INVALID_INPUT');
      expect(res.body.errors.length).toBeLessThanOrEqual(20);
      const huge = await post('echo', JSON.stringify({ text: 'p'.repeat(500_000) }));
      expectProblem(huge, 400, 'INVALID_INPUT');
      expect(JSON.stringify(huge.body).length).toBeLessThan(2000);
    });

    it('accepts the extremes of every range and computes them right', async () => {
      const ledger = new Ledger('range extremes');
      const cases: Array<[string, unknown]> = [
        ['fibonacci', { n: 0 }],
        ['fibonacci', { n: -0 }],
        ['fibonacci', { n: 30.0 }],
        ['echo', { n: 1 }],
        ['echo', { n: 1e12 }],
        ['echo', { text: 'p'.repeat(1024), choice: 'c' }],
        ['echo', { text: '\u{1F600}\u00e9\u0000' }],
        ['echo', { numbers: [1.7976931348623157e308, -1.7976931348623157e308, 5e-324, -0, 0, 1e-7], choice: 'b' }],
        ['echo', { numbers: [] }],
      ];
      for (const [type, input] of cases) expect([200, 202]).toContain((await ledger.submit(api.url, type, input)).status);
      const summary = await ledger.check(api.url, [worker], { timeoutMs: 30_000 });
      ledger.print(summary);
      expect(summary.problems).toEqual([]);
      expect(summary.lost).toBe(0);
    });
  });

  describe('size', () => {
    const numbersBody = (bytes: number) => {
      // Six-digit numbers and a comma: 7 bytes each.
      const count = Math.floor((bytes - 20) / 7);
      return { numbers: Array.from({ length: count }, (_, i) => 100_000 + ((i * 7919) % 900_000)) };
    };

    it('accepts a body just under BODY_LIMIT and runs it right', async () => {
      const input = numbersBody(BODY_LIMIT - 1000);
      expect(JSON.stringify(input).length).toBeLessThan(BODY_LIMIT);
      const ledger = new Ledger('body near the limit');
      expect((await ledger.submit(api.url, 'echo', input)).status).toBe(202);
      const summary = await ledger.check(api.url, [worker], { timeoutMs: 30_000 });
      ledger.print(summary, { bodyBytes: JSON.stringify(input).length });
      expect(summary.completed).toBe(1);
    });

    it('answers 413 just over BODY_LIMIT, with or without a Content-Length', async () => {
      const body = JSON.stringify(numbersBody(BODY_LIMIT + 1000));
      expect(body.length).toBeGreaterThan(BODY_LIMIT);
      expectProblem(await post('echo', body), 413, 'PAYLOAD_TOO_LARGE');
      // Chunked: the size is only known while reading.
      const stream = new ReadableStream({
        start(controller) {
          for (let i = 0; i < body.length; i += 64 * 1024) controller.enqueue(new TextEncoder().encode(body.slice(i, i + 64 * 1024)));
          controller.close();
        },
      });
      const chunked = await request(`${api.url}/v1/jobs/echo`, {
        method: 'POST',
        body: stream,
        headers: { 'content-type': 'application/json' },
        duplex: 'half',
      } as RequestInit).catch((error: unknown) => ({ status: 0, headers: new Headers(), body: String(error) }));
      tried.requests++;
      // The server may answer 413 and close before the client has sent everything.
      expect([413, 0]).toContain(chunked.status);
      if (chunked.status === 413) expectProblem(chunked, 413, 'PAYLOAD_TOO_LARGE');
    });

    it('answers 413 at once to a Content-Length over the limit, before any body arrives', async () => {
      const reply = await rawRequest(api.port, `POST /v1/jobs/echo HTTP/1.1\r\nHost: api\r\nContent-Type: application/json\r\nContent-Length: ${BODY_LIMIT * 100}\r\n\r\n`);
      tried.requests++;
      expect(reply.status).toBe(413);
    });

    it('answers 400 to a huge string value under the limit', async () => {
      expectProblem(await post('echo', JSON.stringify({ text: 'x'.repeat(BODY_LIMIT - 100) })), 400, 'INVALID_INPUT');
    });
  });

  describe('deep nesting', () => {
    const deep = 100_000;
    it.each([
      ['100k unclosed [', '['.repeat(deep)],
      ['100k nested arrays', '['.repeat(deep) + ']'.repeat(deep)],
      ['100k nested arrays as a field', `{"numbers":${'['.repeat(deep)}${']'.repeat(deep)}}`],
      ['100k nested objects', '{"a":'.repeat(deep) + '1' + '}'.repeat(deep)],
      ['100k nested objects hiding __proto__', '{"a":'.repeat(deep) + '{"__proto__":{"x":1}}' + '}'.repeat(deep)],
      ['100k nested objects hiding constructor.prototype', '{"a":'.repeat(deep) + '{"constructor":{"prototype":{"x":1}}}' + '}'.repeat(deep)],
    ])('answers 400 to %s, quickly', async (_, body) => {
      const t0 = Date.now();
      const res = await post('echo', body);
      expectProblem(res, 400);
      expect(Date.now() - t0).toBeLessThan(5000);
    });
  });

  describe('job ids of every shape', () => {
    const long = 'a'.repeat(1100);
    const ids = [
      '00000000-0000-4000-8000-000000000000',
      'FFFFFFFF-FFFF-4FFF-8FFF-FFFFFFFFFFFF',
      '{00000000-0000-4000-8000-000000000000}',
      '00000000000040008000000000000000',
      'a',
      '0',
      '-1',
      '1e999',
      'null',
      'undefined',
      '__proto__',
      'constructor',
      'prototype',
      'hasOwnProperty',
      '*',
      '%2A',
      'x:y:z',
      'cache:fibonacci:v1:abc',
      '%2e%2e',
      '..%2F..%2Fetc%2Fpasswd',
      'a%2Fb',
      '%00',
      '%0D%0ASet-Cookie:%20x=1',
      '%20',
      "'%20OR%201=1--",
      '%3Cscript%3E',
      '%24ne',
      encodeURIComponent('ü'),
      encodeURIComponent('\u{1F600}'),
      'a'.repeat(1000),
    ];
    it.each(ids.map((id) => [id.length > 40 ? `${id.slice(0, 20)}…(${id.length})` : id, id]))('%s: 404 on GET, DELETE and /events', async (_, id) => {
      for (const [method, path] of [
        ['GET', `/v1/jobs/${id}`],
        ['DELETE', `/v1/jobs/${id}`],
        ['GET', `/v1/jobs/${id}/events`],
      ]) {
        const res = await send(path, { method });
        expectProblem(res, 404);
        expect(['JOB_NOT_FOUND', 'NOT_FOUND']).toContain(res.body.code);
        expect(res.headers.get('set-cookie')).toBeNull();
      }
    });

    it('answers 414 to an id longer than the router allows', async () => {
      for (const method of ['GET', 'DELETE']) expectProblem(await send(`/v1/jobs/${long}`, { method }), 414, 'URI_TOO_LONG');
      expectProblem(await send(`/v1/jobs/${long}/events`), 414, 'URI_TOO_LONG');
    });

    it('answers 404 to an empty id and extra path segments', async () => {
      for (const path of ['/v1/jobs/', '/v1/jobs//events', '/v1/jobs/x/events/more', '/v1/jobs/x/y']) {
        const res = await send(path);
        expectProblem(res, 404);
      }
    });
  });

  describe('Prefer: wait', () => {
    it.each([
      ['wait=999999999', 'capped at MAX_WAIT_SECONDS'],
      ['wait="999999999"', 'quoted, capped'],
      ['respond-async, wait=999999999', 'with another preference'],
      ['wait=-1', 'negative: no wait'],
      ['wait=0', 'zero: no wait'],
      ['wait=1e3', 'exponent: no wait'],
      ['wait=0x10', 'hex: no wait'],
      ['wait', 'no value: no wait'],
      [`wait=1, ${'x'.repeat(10_000)}`, 'a huge header: ignored'],
      ['wait=99999999999999999999999999', 'more digits than any integer: no wait'],
    ].map(([prefer, label]) => [label, prefer]))('%s: answers within MAX_WAIT_SECONDS', async (_, prefer) => {
      const t0 = Date.now();
      const res = await send('/v1/jobs/chaos', {
        method: 'POST',
        body: JSON.stringify({ mode: 'sleep', ms: 4000, tag: `prefer-${Date.now()}-${Math.random()}` }),
        headers: { 'content-type': 'application/json', prefer },
      });
      const ms = Date.now() - t0;
      // Cancel it: the job itself is not the point, and it would keep a worker thread busy.
      await send(`/v1/jobs/${res.body.id}`, { method: 'DELETE' });
      expect(res.status).toBe(202);
      expect(ms).toBeLessThan(MAX_WAIT_SECONDS * 1000 + 2000);
    });

    it('ignores a Prefer header on reads', async () => {
      const res = await send('/v1/jobs/00000000-0000-4000-8000-000000000000', { headers: { prefer: 'wait=999999999' } });
      expectProblem(res, 404, 'JOB_NOT_FOUND');
    });
  });

  describe('methods and requests fetch would not send', () => {
    it.each([
      ['PUT', '/v1/jobs/fibonacci'],
      ['PATCH', '/v1/jobs/00000000-0000-4000-8000-000000000000'],
      ['POST', '/v1/jobs/00000000-0000-4000-8000-000000000000/events'],
      ['DELETE', '/v1/job-types'],
      ['POST', '/v1/job-types'],
      ['OPTIONS', '/v1/jobs/fibonacci'],
    ])('%s %s is a 4xx problem', async (method, path) => {
      const res = await send(path, { method, body: method === 'OPTIONS' ? undefined : '{}', headers: { 'content-type': 'application/json' } });
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
      expectProblem(res, res.status);
    });

    it.each([
      ['a garbage request line', 'GARBAGE\r\n\r\n'],
      ['an unknown HTTP version', 'GET /v1/job-types HTTP/9.9\r\nHost: api\r\n\r\n'],
      ['a negative Content-Length', 'POST /v1/jobs/fibonacci HTTP/1.1\r\nHost: api\r\nContent-Type: application/json\r\nContent-Length: -1\r\n\r\n'],
      ['Content-Length and chunked together (smuggling)', 'POST /v1/jobs/fibonacci HTTP/1.1\r\nHost: api\r\nContent-Type: application/json\r\nContent-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nX'],
      ['two Content-Lengths', 'POST /v1/jobs/fibonacci HTTP/1.1\r\nHost: api\r\nContent-Type: application/json\r\nContent-Length: 7\r\nContent-Length: 8\r\n\r\n{"n":3}'],
      ['a bad chunk size', 'POST /v1/jobs/fibonacci HTTP/1.1\r\nHost: api\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\n{"n":3}\r\n0\r\n\r\n'],
      ['a header without a colon', 'GET /v1/job-types HTTP/1.1\r\nHost: api\r\nNoColonHere\r\n\r\n'],
      ['a NUL in the path', 'GET /v1/jobs/a\u0000b HTTP/1.1\r\nHost: api\r\n\r\n'],
      ['a 100 KB header', `GET /v1/job-types HTTP/1.1\r\nHost: api\r\nX-Big: ${'x'.repeat(100_000)}\r\n\r\n`],
    ])('answers %s with a 4xx problem and closes', async (_, raw) => {
      const reply = await rawRequest(api.port, raw);
      tried.requests++;
      expect(reply.status).toBeGreaterThanOrEqual(400);
      expect(reply.status).toBeLessThan(500);
      expect(reply.text).toMatch(/^content-type: application\/problem\+json/im);
      expect(reply.closedAfterMs).toBeDefined();
    });

    it('does not answer a smuggled second request hidden in a body', async () => {
      const smuggled = 'GET /v1/job-types HTTP/1.1\r\nHost: api\r\n\r\n';
      const raw =
        'POST /v1/jobs/fibonacci HTTP/1.1\r\nHost: api\r\nContent-Type: application/json\r\n' +
        `Content-Length: 7\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n${smuggled}`;
      const reply = await rawRequest(api.port, raw);
      tried.requests++;
      expect(reply.text.match(/HTTP\/1\.1 200/g)).toBeNull();
    });
  });

  it('is still healthy, alive and has logged no error after all of it', async () => {
    expect((await request(`${api.url}/health/ready`)).status).toBe(200);
    expect(api.alive).toBe(true);
    expect(worker.alive).toBe(true);
    const errors = [...api.logs, ...worker.logs].filter((l) => l.level >= 50);
    expect(errors).toEqual([]);
  });
});
