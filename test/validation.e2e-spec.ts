import { request } from './support/http';
import { AppProcess, startApp, stackEnv } from './support/apps';

/** Bad input never becomes a job: each case gets a 4xx problem+json naming what is wrong. */
describe('request validation', () => {
  let api: AppProcess;

  beforeAll(async () => {
    api = await startApp('api', stackEnv('validation', { BODY_LIMIT: '64kb' }));
  });
  afterAll(() => api.stop());

  const post = (type: string, body: string | Buffer, contentType = 'application/json') =>
    request(`${api.url}/v1/jobs/${type}`, { method: 'POST', body, headers: { 'content-type': contentType } });

  const expectProblem = (res: { status: number; headers: Headers; body: any }, status: number, code: string) => {
    expect(res.status).toBe(status);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(res.body).toMatchObject({ status, code });
    expect(typeof res.body.detail).toBe('string');
    expect(JSON.stringify(res.body)).not.toMatch(/at .*\.js:\d+/); // no stack traces
  };

  it.each([
    ['a string', '{"n":"5"}', 'n'],
    ['a fraction', '{"n":1.5}', 'n'],
    ['out of range', '{"n":51}', 'n'],
    ['negative', '{"n":-1}', 'n'],
    ['missing', '{}', 'n'],
    ['null', '{"n":null}', 'n'],
  ])('rejects n as %s with a field error', async (_, body, field) => {
    const res = await post('fibonacci', body);
    expectProblem(res, 400, 'INVALID_INPUT');
    expect(res.body.errors).toEqual(expect.arrayContaining([expect.objectContaining({ field })]));
  });

  it('names unknown fields', async () => {
    const res = await post('fibonacci', '{"n":5,"evil":true}');
    expectProblem(res, 400, 'INVALID_INPUT');
    expect(res.body.errors[0].message).toMatch(/evil/);
  });

  it.each([
    ['echo', { n: 1e12 + 1 }, 'n'],
    ['echo', { n: 0 }, 'n'],
    ['echo', { n: 2, choice: 'md5' }, 'choice'],
    ['echo', { text: 'x'.repeat(1025) }, 'text'],
    ['echo', { text: 5 }, 'text'],
    ['echo', { numbers: [1, '2'] }, 'numbers.1'],
    ['echo', { numbers: [1], choice: 'sideways' }, 'choice'],
    ['echo', { numbers: 'not a list' }, 'numbers'],
  ])('%s rejects %j', async (type, input, field) => {
    const res = await post(type, JSON.stringify(input));
    expectProblem(res, 400, 'INVALID_INPUT');
    expect(res.body.errors.map((e: { field: string }) => e.field)).toContain(field);
  });

  it.each([
    ['malformed JSON', '{"n":', 'application/json'],
    ['an empty body', '', 'application/json'],
    ['a JSON array', '[1,2]', 'application/json'],
    ['a JSON string', '"n"', 'application/json'],
  ])('rejects %s', async (_, body, type) => {
    const res = await post('fibonacci', body, type);
    expect([400]).toContain(res.status);
    expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  });

  it('rejects __proto__ and constructor.prototype keys', async () => {
    expectProblem(await post('fibonacci', '{"n":5,"__proto__":{"polluted":true}}'), 400, 'MALFORMED_REQUEST');
    expectProblem(await post('fibonacci', '{"n":5,"constructor":{"prototype":{"polluted":true}}}'), 400, 'MALFORMED_REQUEST');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('rejects invalid UTF-8', async () => {
    const body = Buffer.concat([Buffer.from('{"text":"'), Buffer.from([0xc3, 0x28]), Buffer.from('","n":1}')]);
    expectProblem(await post('echo', body), 400, 'MALFORMED_REQUEST');
  });

  it('answers 415 to anything but JSON', async () => {
    expectProblem(await post('fibonacci', 'n=5', 'application/x-www-form-urlencoded'), 415, 'UNSUPPORTED_MEDIA_TYPE');
    expectProblem(await post('fibonacci', '{"n":5}', 'text/plain'), 415, 'UNSUPPORTED_MEDIA_TYPE');
    const noType = await request(`${api.url}/v1/jobs/fibonacci`, { method: 'POST', body: new Uint8Array(Buffer.from('{"n":5}')) });
    expect(noType.status).toBe(415);
  });

  it('answers 413 to a body over BODY_LIMIT', async () => {
    const numbers = Array.from({ length: 20_000 }, (_, i) => i);
    expectProblem(await post('echo', JSON.stringify({ numbers })), 413, 'PAYLOAD_TOO_LARGE');
  });

  it('answers 404 to an unknown job type and an unknown route', async () => {
    expectProblem(await post('mine-bitcoin', '{}'), 404, 'UNKNOWN_JOB_TYPE');
    expectProblem(await request(`${api.url}/v2/nothing`), 404, 'NOT_FOUND');
  });

  it('accepts JSON with a charset and +json media types', async () => {
    expect((await post('fibonacci', '{"n":3}', 'application/json; charset=utf-8')).status).toBe(202);
    expect((await post('fibonacci', '{"n":4}', 'application/vnd.api+json')).status).toBe(202);
  });

  it('ignores absurd Prefer: wait values instead of failing', async () => {
    for (const prefer of ['wait=-5', 'wait=abc', 'wait=99999999999', 'wait=1.5']) {
      const res = await request(`${api.url}/v1/jobs/fibonacci`, {
        method: 'POST',
        json: { n: 6 },
        headers: { prefer },
      });
      expect([200, 202]).toContain(res.status);
    }
  });
});
