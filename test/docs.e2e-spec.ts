import { randomBytes } from 'node:crypto';
import { allJobs } from '@app/jobs';
import { AppProcess, startAll, startApp, stackEnv } from './support/apps';
import { ifPresent, present } from './support/capabilities';
import { request } from './support/http';
import { DocumentSchemas, OpenApiDocument, validateOpenApi } from './support/openapi';

const KEY = randomBytes(32).toString('hex');
const auth = { 'x-api-key': KEY };

/**
 * The OpenAPI document at /docs-json, read from a running API (every job type, DEMO's routes too):
 * it validates as OpenAPI 3.1, lists every route the app maps and every job type the app serves,
 * its examples match its schemas, and what the API really answers matches what it documents.
 */
describe('API docs', () => {
  let api: AppProcess;
  let worker: AppProcess;
  let doc: OpenApiDocument;
  let schemas: DocumentSchemas;
  let types: Array<{ type: string; inputSchema: Record<string, unknown>; outputSchema: Record<string, unknown>; examples: unknown[] }>;
  /** Real answers that must match the document's schema for their route and status. */
  const documented = (path: string, method: string, reply: { status: number; body: unknown; headers: Headers }) => {
    const mediaType = (reply.headers.get('content-type') ?? '').split(';')[0];
    return schemas.check(schemas.response(path, method, reply.status, mediaType), reply.body);
  };

  beforeAll(async () => {
    const env = stackEnv('docs', { API_KEYS: `ops=${KEY}`, DEMO: 'true', API_DOCS: 'true' });
    [api, worker] = await startAll([startApp('api', env), startApp('worker', env)]);
    const reply = await request(`${api.url}/docs-json`, { headers: auth });
    expect(reply.status).toBe(200);
    doc = reply.body as OpenApiDocument;
    schemas = new DocumentSchemas(doc);
    types = (await request(`${api.url}/v1/job-types`, { headers: auth })).body;
  }, 60_000);

  afterAll(async () => {
    await Promise.all([api?.stop(), worker?.stop()]);
  });

  it('is a valid OpenAPI 3.1 document', () => {
    expect(doc.openapi).toBe('3.1.0');
    expect(validateOpenApi(doc)).toEqual({ valid: true, version: '3.1' });
  });

  it('lists every route the running app mapped, a {type} route once per job type', () => {
    const mapped = api.logs.flatMap((l) => {
      const m = /^Mapped \{(\S+), (\w+)\} route$/.exec(l.msg);
      return m ? [{ path: m[1].replace(/:(\w+)/g, '{$1}'), method: m[2].toLowerCase() }] : [];
    });
    expect(mapped.length).toBeGreaterThanOrEqual(8); // the core's own: jobs, job types, probes, /metrics
    const missing = mapped.flatMap(({ path, method }) => {
      const concrete = path.includes('{type}') ? types.map((t) => path.replace('{type}', t.type)) : [path];
      return concrete.filter((p) => !doc.paths[p]?.[method]).map((p) => `${method.toUpperCase()} ${p}`);
    });
    expect(missing).toEqual([]);
    expect(mapped.map((r) => r.path)).toEqual(expect.arrayContaining(['/v1/jobs/{type}', ...(present('demo') ? ['/demo'] : []), '/metrics', '/health/ready']));
  });

  it('documents every job type the app serves, with the schemas of its declaration', () => {
    expect(types.map((t) => t.type)).toEqual(allJobs.map((def) => def.name));
    for (const { type, inputSchema, outputSchema } of types) {
      expect(doc.paths[`/v1/jobs/${type}`].post.requestBody!.content['application/json'].schema).toEqual({ $ref: `#/components/schemas/JobInput.${type}` });
      const { $schema: _a, description: _b, ...input } = inputSchema;
      const { $schema: _c, ...output } = outputSchema;
      expect(doc.components.schemas[`JobInput.${type}`]).toMatchObject(input);
      expect(doc.components.schemas[`JobOutput.${type}`]).toEqual(output);
      expect(doc.components.schemas[`JobView.${type}`]).toMatchObject({ properties: { type: { const: type }, result: { $ref: `#/components/schemas/JobOutput.${type}` } } });
    }
  });

  it('describes the API keys, the Prefer header, server-sent events and the problem shapes', () => {
    expect(doc.components.securitySchemes).toEqual({
      bearer: expect.objectContaining({ type: 'http', scheme: 'bearer' }),
      apiKey: expect.objectContaining({ type: 'apiKey', in: 'header', name: 'x-api-key' }),
    });
    const submit = doc.paths['/v1/jobs/fibonacci'].post;
    expect(submit.security).toEqual([{ bearer: [] }, { apiKey: [] }]);
    expect(doc.paths['/health/live'].get.security).toEqual([]);
    expect(submit.parameters).toEqual(expect.arrayContaining([expect.objectContaining({ name: 'Prefer', in: 'header' })]));
    expect(Object.keys(submit.responses).sort()).toEqual(['200', '202', '400', '401', '403', '404', '413', '415', '422', '429', '503']);
    expect(submit.responses['400'].content!['application/problem+json'].schema).toEqual({ $ref: '#/components/schemas/Problem' });
    expect(Object.keys(doc.paths['/v1/jobs/{id}/events'].get.responses['200'].content!)).toEqual(['text/event-stream']);
  });

  ifPresent('batch').it('lists the same problems for a job and a batch submission, but BACKLOG_FULL and CALLER_BACKLOG_FULL (a batch answers them per item)', () => {
    const problems = (path: string) =>
      Object.values(doc.paths[path].post.responses)
        .flatMap((r) => Object.keys(r.content?.['application/problem+json']?.examples ?? {}))
        .sort();
    const single = problems('/v1/jobs/fibonacci');
    expect(single).toEqual(expect.arrayContaining(['BACKLOG_FULL', 'CALLER_BACKLOG_FULL', 'NOT_REPLICATED', 'INVALID_CALLBACK_URL', 'RATE_LIMITED']));
    expect(problems('/v1/jobs/fibonacci/batch')).toEqual(single.filter((code) => !['BACKLOG_FULL', 'CALLER_BACKLOG_FULL'].includes(code)));
  });

  it('has examples that match their schemas, the declared ones on each job type\'s body', () => {
    const examples = [...schemas.examples()];
    for (const t of types) {
      const shown = Object.values(doc.paths[`/v1/jobs/${t.type}`].post.requestBody!.content['application/json'].examples ?? {}).map((e) => e.value);
      expect({ type: t.type, shown }).toEqual({ type: t.type, shown: t.examples });
    }
    const wrong = examples.map((e) => ({ where: e.where, errors: schemas.check(e.schema, e.value) })).filter((e) => e.errors.length > 0);
    expect(wrong).toEqual([]);
  });

  it('runs every request body example it shows, and answers as it documents', async () => {
    const ran: string[] = [];
    for (const [path, item] of Object.entries(doc.paths)) {
      for (const [name, example] of Object.entries(item.post?.requestBody?.content['application/json']?.examples ?? {})) {
        const reply = await request(`${api.url}${path}`, { method: 'POST', json: example.value, headers: { ...auth, prefer: 'wait=30' } });
        expect({ example: `${path} ${name}`, status: reply.status, state: reply.body.status }).toEqual({ example: `${path} ${name}`, status: 200, state: 'completed' });
        expect(documented(path, 'post', reply)).toEqual([]);
        const read = await request(`${api.url}/v1/jobs/${reply.body.id}`, { headers: auth });
        expect(documented('/v1/jobs/{id}', 'get', read)).toEqual([]);
        ran.push(`${path} ${name}`);
      }
    }
    expect(ran.length).toBe(types.reduce((n, t) => n + t.examples.length, 0));
    expect(ran.length).toBeGreaterThanOrEqual(6);
  }, 120_000);

  it('documents what the API answers on errors, probes and listings', async () => {
    const cases: Array<[string, string, RequestInit & { json?: unknown }]> = [
      ['/v1/jobs/fibonacci', 'post', { method: 'POST', json: { n: -1 }, headers: auth }],
      ['/v1/jobs/fibonacci', 'post', { method: 'POST', json: { n: 1 } }],
      ['/v1/jobs/fibonacci', 'post', { method: 'POST', body: 'n=1', headers: { ...auth, 'content-type': 'text/plain' } }],
      ['/v1/jobs/{id}', 'get', { headers: auth }],
      ['/v1/jobs/{id}', 'delete', { method: 'DELETE', headers: auth }],
      ['/v1/job-types', 'get', { headers: auth }],
      ['/health/live', 'get', {}],
      ['/health/ready', 'get', {}],
      ...(present('demo') ? [['/demo/ping', 'get', {}] as [string, string, RequestInit], ['/demo/loop', 'get', {}] as [string, string, RequestInit]] : []),
    ];
    const statuses: number[] = [];
    for (const [path, method, init] of cases) {
      const url = `${api.url}${path.replace('{id}', 'no-such-job')}`;
      const reply = await request(url, init);
      statuses.push(reply.status);
      expect({ path, method, errors: documented(path, method, reply) }).toEqual({ path, method, errors: [] });
    }
    expect(statuses).toEqual([400, 401, 415, 404, 404, 200, 200, 200, ...(present('demo') ? [200, 200] : [])]);
    // A finished job cannot be cancelled: 409, as documented.
    const done = await request(`${api.url}/v1/jobs/fibonacci`, { method: 'POST', json: { n: 3 }, headers: { ...auth, prefer: 'wait=30' } });
    const cancel = await request(`${api.url}/v1/jobs/${done.body.id}`, { method: 'DELETE', headers: auth });
    expect(cancel.status).toBe(409);
    expect(documented('/v1/jobs/{id}', 'delete', cancel)).toEqual([]);
    const events = await fetch(`${api.url}/v1/jobs/${done.body.id}/events`, { headers: auth });
    expect(events.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(await events.text()).toMatch(/^retry: 1000\n\nid: final\nevent: completed\ndata: /);
  });

  it('is behind the API keys when the API has them, for the page and the document', async () => {
    for (const path of ['/docs', '/docs-json', '/docs/swagger-ui-init.js']) {
      const open = await request(`${api.url}${path}`);
      expect({ path, status: open.status, code: open.body?.code }).toEqual({ path, status: 401, code: 'UNAUTHORIZED' });
      expect((await request(`${api.url}${path}`, { headers: { authorization: `Bearer ${KEY}` } })).status).toBe(200);
    }
    const page = await fetch(`${api.url}/docs`, { headers: auth });
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
  });

  it('is not served with API_DOCS=false, nor the dashboard without QUEUE_DASHBOARD', async () => {
    expect((await request(`${api.url}/admin/queues`, { headers: auth })).status).toBe(404);
    const off = await startApp('api', stackEnv('docs-off', { API_DOCS: 'false' }));
    try {
      expect((await request(`${off.url}/docs`)).status).toBe(404);
      expect((await request(`${off.url}/docs-json`)).status).toBe(404);
    } finally {
      await off.stop();
    }
  });
});
