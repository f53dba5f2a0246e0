import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { allJobs } from '@app/jobs';
import { AppProcess, startAll, startApp, stackEnv } from './support/apps';
import { ifPresent } from './support/capabilities';
import { request } from './support/http';
import { LintProblem, OpenApiDocument, lintOpenApi } from './support/openapi';

const KEY = randomBytes(32).toString('hex');

/**
 * The warnings of Redocly's `recommended` ruleset the document may keep, by rule and the JSON
 * pointer they are at; any other warning fails, as does every error. docs/api-docs-lint.md lists
 * them for readers: keep the two in step.
 */
const ALLOWED_WARNINGS: Array<{ rule: string; at: RegExp }> = [
  // The probes, /metrics and the demo take no input and no key: no 4xx answer exists to document.
  // Nor does fair share's admin view on an open API (no keys: /admin is open too).
  { rule: 'operation-4xx-response', at: /^#\/paths\/~1(health~1(live|ready)|metrics|demo(~1(ping|loop))?|admin~1callers)\/get\/responses$/ },
];

const unexpected = (problems: LintProblem[]) =>
  problems.filter((p) => p.severity === 'error' || !ALLOWED_WARNINGS.some((a) => a.rule === p.rule && a.at.test(p.pointer)));

const operationsOf = (doc: OpenApiDocument) =>
  Object.entries(doc.paths).flatMap(([path, item]) => Object.entries(item).map(([method, op]) => ({ path, method, op })));

/**
 * The OpenAPI document as the built API serves it at /docs-json, with and without API_KEYS, passes
 * Redocly's `recommended` ruleset (errors none, warnings only the allowed ones) and declares the
 * keys exactly where the API asks for them.
 */
describe('OpenAPI document lint', () => {
  let keyed: AppProcess;
  let open: AppProcess;
  let docs: Record<'keyed' | 'open', OpenApiDocument>;

  beforeAll(async () => {
    // why DEMO and CHAOS_JOBS (stackEnv): every route and job type the API can serve is in the document.
    [keyed, open] = await startAll([
      startApp('api', stackEnv('lint-keyed', { API_KEYS: `ops=${KEY}`, API_DOCS: 'true', DEMO: 'true' })),
      startApp('api', stackEnv('lint-open', { API_DOCS: 'true', DEMO: 'true' })),
    ]);
    const read = async (api: AppProcess) => {
      const reply = await request<OpenApiDocument>(`${api.url}/docs-json`, { headers: { 'x-api-key': KEY } });
      expect(reply.status).toBe(200);
      return reply.body;
    };
    docs = { keyed: await read(keyed), open: await read(open) };
  }, 60_000);

  afterAll(async () => {
    await Promise.all([keyed?.stop(), open?.stop()]);
  });

  it.each(['keyed', 'open'] as const)('passes the recommended ruleset (%s API)', (name) => {
    const problems = lintOpenApi(docs[name]);
    expect(unexpected(problems)).toEqual([]);
    // The allow-list is not dead weight: each entry still matches something.
    for (const allowed of ALLOWED_WARNINGS) expect(problems.some((p) => p.rule === allowed.rule && allowed.at.test(p.pointer))).toBe(true);
  });

  it('finds what the ruleset forbids (the check itself can fail)', () => {
    const broken = structuredClone(docs.keyed);
    broken.servers = [];
    delete broken.paths['/v1/job-types'].get.summary;
    broken.components.schemas.Orphan = { type: 'string' };
    const rules = unexpected(lintOpenApi(broken)).map((p) => p.rule);
    expect(rules).toEqual(expect.arrayContaining(['no-empty-servers', 'operation-summary', 'no-unused-components']));
  });

  it('declares the keys on /v1 and /admin only when API_KEYS is set, and the probes and /metrics open', () => {
    const either = [{ bearer: [] }, { apiKey: [] }];
    for (const { path, method, op } of operationsOf(docs.keyed)) {
      expect({ path, method, security: op.security }).toEqual({ path, method, security: /^\/(v1|admin)\//.test(path) ? either : [] });
    }
    expect(Object.keys(docs.keyed.components.securitySchemes ?? {}).sort()).toEqual(['apiKey', 'bearer']);
    for (const path of ['/health/live', '/health/ready', '/metrics']) expect(docs.keyed.paths[path].get.security).toEqual([]);

    expect(docs.open.components.securitySchemes).toBeUndefined();
    for (const { path, method, op } of operationsOf(docs.open)) {
      expect({ path, method, security: op.security, unauthorized: op.responses['401'] }).toEqual({ path, method, security: [], unauthorized: undefined });
    }
  });

  const singles = () => Object.keys(docs.keyed.paths).filter((p) => /^\/v1\/jobs\/[a-z0-9-]+$/.test(p) && docs.keyed.paths[p].post);

  it('lists a route for each job type, and the license of package.json', () => {
    expect(singles().map((p) => p.slice('/v1/jobs/'.length)).sort()).toEqual(allJobs.map((def) => def.name).sort());
    const { license } = JSON.parse(readFileSync(join(__dirname, '..', 'package.json'), 'utf8')) as { license: string };
    expect(docs.keyed.info.license).toEqual({ name: license, identifier: license });
  });

  ifPresent('batch').it("lists each job type's route before its batch route", () => {
    const paths = Object.keys(docs.keyed.paths);
    for (const single of singles()) expect({ single, before: paths.indexOf(single) < paths.indexOf(`${single}/batch`) }).toEqual({ single, before: true });
  });
});
