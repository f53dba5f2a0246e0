import fc from 'fast-check';
import { AppProcess, startStack, stackEnv } from '../support/apps';

/**
 * Property-based fuzzing of every endpoint: thousands of generated requests (arbitrary JSON, near-miss
 * job inputs, random bytes, random media types, methods, paths and ids). The property: the API answers
 * every one with a 2xx or a 4xx, every 4xx is a problem+json with status, code and detail, it never
 * answers 5xx, never hangs, never drops the connection, never logs an error, and stays ready.
 *
 * Reproduce a run with FUZZ_SEED=<seed printed below>; FUZZ_RUNS sets the number of requests.
 */

// why echo (a test type): its fields are one of each kind a job type may declare; fibonacci has one integer.
const TYPES = ['fibonacci', 'echo'] as const;
const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'] as const;
const RUNS = Number(process.env.FUZZ_RUNS ?? 5000);
const SEED = Number(process.env.FUZZ_SEED ?? Date.now() % 2 ** 31);

type Body = string | Uint8Array | undefined;
type Id = { raw: string } | { known: number };
interface FuzzRequest {
  kind: 'submit' | 'get' | 'delete' | 'events' | 'types' | 'random';
  method: string;
  path: string | ((id: string) => string);
  id?: Id;
  body?: Body;
  headers: Record<string, string>;
}

// ---- Values that are almost right: boundaries, wrong types, numbers as strings, extra and missing keys.
const junk = fc.oneof(fc.integer(), fc.double(), fc.string({ maxLength: 12 }), fc.boolean(), fc.constant(null), fc.constant({}), fc.constant([]));
const intish = (min: number, max: number, cheapMax = max) =>
  fc.oneof(
    { weight: 5, arbitrary: fc.integer({ min, max: cheapMax }) },
    { weight: 2, arbitrary: fc.constantFrom(min - 1, max + 1, min, -0, 0.5, max + 0.5, 1e308, -1e308, 2 ** 53 + 2, 5e-324, -1) },
    { weight: 1, arbitrary: fc.constant(max) },
    { weight: 1, arbitrary: junk },
    { weight: 1, arbitrary: fc.integer({ min, max: cheapMax }).map(String) },
  );
const text = (max: number) =>
  fc.oneof(
    { weight: 5, arbitrary: fc.string({ minLength: 1, maxLength: 24, unit: 'binary' }) },
    { weight: 1, arbitrary: fc.constantFrom('', 'x'.repeat(max), 'x'.repeat(max + 1), '__proto__', 'constructor', '\u0000', '\ud800') },
    { weight: 1, arbitrary: junk },
  );
const extraKeys = fc.dictionary(fc.constantFrom('extra', '__proto__', 'constructor', 'prototype', 'toString', 'N', 'n '), junk, { maxKeys: 2 });
const withExtras = <T extends object>(arb: fc.Arbitrary<T>) =>
  fc.tuple(arb, fc.option(extraKeys, { freq: 4 })).map(([value, extra]) => (extra ? { ...value, ...extra } : value));

const nearMiss: Record<(typeof TYPES)[number], fc.Arbitrary<object>> = {
  fibonacci: withExtras(fc.record({ n: intish(0, 50, 25) }, { requiredKeys: [] })),
  echo: withExtras(
    fc.record(
      {
        n: intish(1, 1e12, 100_000),
        text: text(1024),
        numbers: fc.oneof(
          { weight: 4, arbitrary: fc.array(fc.double({ noNaN: true, noDefaultInfinity: true }), { maxLength: 30 }) },
          { weight: 1, arbitrary: fc.array(junk, { maxLength: 5 }) },
          { weight: 1, arbitrary: junk },
        ),
        choice: fc.oneof(fc.constantFrom('a', 'b', 'c', 'A', 'd', ''), junk),
      },
      { requiredKeys: [] },
    ),
  ),
};

/** A JSON text with one random edit: truncated, a character dropped, or one inserted. */
const mutated = (json: fc.Arbitrary<string>) =>
  fc.tuple(json, fc.nat(), fc.constantFrom('truncate', 'drop', 'insert'), fc.constantFrom('{', '}', '"', ',', ':', '\\', '\u0000', 'é', '\u2028', ' '))
    .map(([s, at, op, ch]) => {
      const i = s.length ? at % s.length : 0;
      return op === 'truncate' ? s.slice(0, i) : op === 'drop' ? s.slice(0, i) + s.slice(i + 1) : s.slice(0, i) + ch + s.slice(i);
    });

const bodyFor = (type: string): fc.Arbitrary<Body> => {
  const valid = Object.hasOwn(nearMiss, type) ? nearMiss[type as keyof typeof nearMiss] : nearMiss.fibonacci;
  return fc.oneof(
    { weight: 8, arbitrary: valid.map((v) => JSON.stringify(v)) },
    { weight: 2, arbitrary: mutated(valid.map((v) => JSON.stringify(v))) },
    { weight: 2, arbitrary: fc.json({ maxDepth: 4 }) },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 300 }) },
    { weight: 1, arbitrary: fc.string({ maxLength: 200, unit: 'binary' }) },
    { weight: 1, arbitrary: fc.integer({ min: 1, max: 50_000 }).map((depth) => '['.repeat(depth)) },
    { weight: 1, arbitrary: fc.integer({ min: 1, max: 20_000 }).map((depth) => '{"a":'.repeat(depth) + '1' + '}'.repeat(depth)) },
    { weight: 1, arbitrary: fc.constantFrom<Body>(undefined, '', 'null', '{"__proto__":{"x":1}}', '{"constructor":{"prototype":{}}}', '\ufeff{}') },
  );
};

const printable = (max: number) => fc.stringMatching(new RegExp(`^[ -~]{0,${max}}$`));
const contentType = fc.oneof(
  { weight: 12, arbitrary: fc.constant('application/json') },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      'application/json; charset=utf-8',
      'application/problem+json',
      'application/vnd.api+json',
      'APPLICATION/JSON',
      'application/json; charset=latin1',
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'application/octet-stream',
      '',
    ),
  },
  { weight: 1, arbitrary: printable(40) },
);
const prefer = fc.option(
  fc.oneof(
    fc.integer({ min: -3, max: 1 }).map((n) => `wait=${n}`),
    fc.constantFrom('wait=999999999', 'wait=abc', 'respond-async', 'wait=1.5', 'wait=-0'),
    printable(30),
  ),
  { freq: 8 },
);
const segment = fc.oneof(
  fc.constantFrom('v1', 'jobs', 'job-types', 'health', 'ready', 'live', 'metrics', 'events', '', '.', '..', '%', '%zz', '%FF', '%00', '%2F', '__proto__'),
  fc.string({ maxLength: 12, unit: 'binary' }).map(encodeURIComponent),
);
const id: fc.Arbitrary<Id> = fc.oneof(
  { weight: 4, arbitrary: fc.nat().map((known) => ({ known })) },
  { weight: 3, arbitrary: fc.uuid().map((raw) => ({ raw })) },
  { weight: 2, arbitrary: fc.string({ maxLength: 50, unit: 'binary' }).map((s) => ({ raw: encodeURIComponent(s) })) },
  { weight: 1, arbitrary: fc.stringMatching(/^[0-9a-fA-F-]{30,40}$/).map((raw) => ({ raw })) },
  { weight: 1, arbitrary: segment.map((raw) => ({ raw })) },
  { weight: 1, arbitrary: fc.integer({ min: 900, max: 1200 }).map((n) => ({ raw: 'a'.repeat(n) })) },
);
const commonHeaders = fc.record(
  { prefer, 'x-request-id': fc.option(printable(140), { freq: 4 }), accept: fc.option(fc.constantFrom('text/event-stream', '*/*', 'text/html'), { freq: 4 }) },
  { requiredKeys: [] },
).map((h) => Object.fromEntries(Object.entries(h).filter(([, v]) => v !== null && v !== undefined)) as Record<string, string>);

const submit: fc.Arbitrary<FuzzRequest> = fc
  .oneof({ weight: 9, arbitrary: fc.constantFrom<string>(...TYPES) }, { weight: 1, arbitrary: segment })
  .chain((type) =>
    fc.record({ body: bodyFor(type), type: contentType, headers: commonHeaders }).map(({ body, type: ct, headers }) => ({
      kind: 'submit' as const,
      method: 'POST',
      path: `/v1/jobs/${type}`,
      body,
      headers: { ...headers, 'content-type': ct },
    })),
  );
const byId = (kind: 'get' | 'delete' | 'events', method: string, suffix: string): fc.Arbitrary<FuzzRequest> =>
  fc.record({ id, headers: commonHeaders }).map(({ id: i, headers }) => ({ kind, method, id: i, path: (s: string) => `/v1/jobs/${s}${suffix}`, headers }));
const random: fc.Arbitrary<FuzzRequest> = fc
  .record({
    method: fc.constantFrom(...METHODS),
    segments: fc.array(segment, { minLength: 0, maxLength: 5 }),
    body: fc.option(bodyFor('fibonacci'), { freq: 2 }),
    type: contentType,
    headers: commonHeaders,
  })
  .map(({ method, segments, body, type, headers }) => ({
    kind: 'random' as const,
    method,
    path: `/${segments.join('/')}`,
    body: method === 'GET' || method === 'HEAD' ? undefined : (body ?? undefined),
    headers: { ...headers, 'content-type': type },
  }));
const anyRequest: fc.Arbitrary<FuzzRequest> = fc.oneof(
  { weight: 10, arbitrary: submit },
  { weight: 3, arbitrary: byId('get', 'GET', '') },
  { weight: 2, arbitrary: byId('delete', 'DELETE', '') },
  { weight: 2, arbitrary: byId('events', 'GET', '/events') },
  { weight: 1, arbitrary: commonHeaders.map((headers) => ({ kind: 'types' as const, method: 'GET', path: '/v1/job-types', headers })) },
  { weight: 3, arbitrary: random },
);

describe('fuzzing every endpoint', () => {
  let api: AppProcess;
  let worker: AppProcess;
  let stop: () => Promise<void>;

  beforeAll(async () => {
    // Small job timeouts so whatever valid work the fuzzer submits does not pile up; waits capped at 1 s.
    // CHAOS_JOBS (stackEnv's default) registers echo; nothing here names chaos.
    ({ api, worker, stop } = await startStack(
      stackEnv('input-fuzz', { WORKER_THREADS: '1', JOB_TIMEOUT_MS: '300', MAX_WAIT_SECONDS: '1', JOB_RETENTION_SECONDS: '600' }),
    ));
  });
  afterAll(() => stop(), 30_000);

  it(`answers ${RUNS} generated requests with 2xx or 4xx problems only, and stays healthy`, async () => {
    const known: string[] = [];
    const statuses = new Map<string, number>();
    const failures: Array<{ why: string; method: string; url: string; status?: number; body?: string; sent?: string }> = [];
    let tried = 0;
    let fiveXX = 0;
    const t0 = Date.now();

    const send = async (req: FuzzRequest): Promise<void> => {
      const idText = req.id === undefined ? '' : 'known' in req.id ? (known[req.id.known % Math.max(1, known.length)] ?? 'no-job-yet') : req.id.raw;
      const path = typeof req.path === 'function' ? req.path(idText) : req.path;
      const url = `${api.url}${path}`;
      const sent = req.body === undefined ? undefined : typeof req.body === 'string' ? req.body.slice(0, 200) : `<${req.body.length} bytes>`;
      const fail = (why: string, extra: { status?: number; body?: string } = {}): void => {
        failures.push({ why, method: req.method, url: url.slice(0, 200), sent, ...extra });
      };
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(), 8000);
      tried++;
      try {
        const res = await fetch(url, { method: req.method, headers: req.headers, body: req.body as RequestInit['body'], signal: controller.signal });
        const key = `${res.status}`;
        statuses.set(key, (statuses.get(key) ?? 0) + 1);
        if (res.status >= 500) fiveXX++;
        // An event stream of a job that is still running: the headers are the answer; hang up.
        if (res.status === 200 && (res.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
          controller.abort();
          return;
        }
        const text = await res.text();
        if (res.status >= 500) return fail('5xx', { status: res.status, body: text.slice(0, 300) });
        if (res.status >= 400 && req.method !== 'HEAD') {
          let problem: any;
          try {
            problem = JSON.parse(text);
          } catch {
            return fail('4xx without a JSON body', { status: res.status, body: text.slice(0, 300) });
          }
          if (!(res.headers.get('content-type') ?? '').startsWith('application/problem+json')) fail('4xx not problem+json', { status: res.status });
          if (problem?.status !== res.status || typeof problem?.code !== 'string' || typeof problem?.detail !== 'string') {
            fail('problem without status/code/detail', { status: res.status, body: text.slice(0, 300) });
          }
        }
        if (req.kind === 'submit' && (res.status === 200 || res.status === 202)) {
          const view = JSON.parse(text);
          if (typeof view.id === 'string' && !known.includes(view.id)) known.push(view.id);
        }
      } catch (error) {
        statuses.set('no answer', (statuses.get('no answer') ?? 0) + 1);
        fail(controller.signal.aborted ? 'no answer within 8 s' : `connection failed: ${String((error as Error).cause ?? error)}`);
      } finally {
        clearTimeout(timer);
      }
    };

    await fc.assert(fc.asyncProperty(anyRequest, send), { numRuns: RUNS, seed: SEED, endOnFailure: true });
    const seconds = ((Date.now() - t0) / 1000).toFixed(1);
    const ready = (await fetch(`${api.url}/health/ready`)).status;
    const errors = [...api.logs, ...worker.logs].filter((l) => l.level >= 50);
    console.log(
      `[fuzz] seed=${SEED} inputs=${tried} in ${seconds}s 5xx=${fiveXX} failures=${failures.length} ` +
        `statuses=${JSON.stringify(Object.fromEntries([...statuses].sort()))} jobsAccepted=${known.length} ` +
        `apiAlive=${api.alive} ready=${ready} errorLogs=${errors.length}` +
        (failures.length ? `\n  first failures: ${JSON.stringify(failures.slice(0, 8), null, 1)}` : '') +
        (errors.length ? `\n  first error logs: ${JSON.stringify(errors.slice(0, 3)).slice(0, 1500)}` : ''),
    );

    expect(tried).toBeGreaterThanOrEqual(RUNS);
    expect(fiveXX).toBe(0);
    expect(failures).toEqual([]);
    expect(api.alive).toBe(true);
    expect(worker.alive).toBe(true);
    expect(ready).toBe(200);
    expect(errors).toEqual([]);
  }, 120_000);
});
