import type { INestApplication } from '@nestjs/common';
import * as swagger from '@nestjs/swagger';
import type { Config } from '@app/config';
import { JobRegistry } from '@app/jobs';
import { API_ERRORS, ApiErrorCode } from '../http/api-error';
import { AUTH_FAILURES_PER_MINUTE } from '../security/auth-failures';
import { jobTypeSchemas, expandJobTypePaths } from './job-types.openapi';
import { problemResponse } from '../http/openapi.decorators';
import { applyRecordedOpenApi } from '../http/openapi.recorder';
import { describeOperationRoutes } from './operations.openapi';
import { COMMON_SCHEMAS } from './openapi.schemas';

const DESCRIPTION = `CPU jobs off the event loop: submit a job, then read, stream or cancel it.

Every \`/v1\` route needs an API key when the server has \`API_KEYS\` set: \`Authorization: Bearer <key>\`
or \`x-api-key: <key>\` (use **Authorize** to try them here); an admin key (\`ADMIN_API_KEYS\`) gets 403.
\`/admin\` routes take admin keys only, in the same headers, once either is set.
An address that sent ${AUTH_FAILURES_PER_MINUTE} wrong keys gets 429 with \`Retry-After\` for its wrong keys until its
tries refill (${AUTH_FAILURES_PER_MINUTE} a minute); right keys are served meanwhile. Errors are \`application/problem+json\` with a
stable \`code\`. Each response carries \`x-request-id\` (yours, when you send a plain token).`;

/**
 * What the access middleware may answer on every /v1 route (see security/access.middleware.ts): 503
 * when, with keys, it cannot reach Redis to count a wrong key. Without
 * keys it answers neither 401 nor 403.
 */
const V1_PROBLEMS: ApiErrorCode[] = ['RATE_LIMITED', 'QUEUE_UNAVAILABLE'];
const KEY_PROBLEMS: ApiErrorCode[] = ['UNAUTHORIZED', 'FORBIDDEN'];

/**
 * The OpenAPI 3.1 document of the API, from the code: routes and their decorators (scanned by
 * @nestjs/swagger), job types from the registry (one path per type for routes with `{type}`), error
 * shapes from API_ERRORS, and the API keys only when `API_KEYS` is set (what the server enforces).
 */
export function buildOpenApiDocument(app: INestApplication, registry: JobRegistry, config: Pick<Config, 'apiKeys' | 'adminApiKeys'>): swagger.OpenAPIObject {
  applyRecordedOpenApi(swagger);
  describeOperationRoutes();
  const keyed = config.apiKeys.length > 0;
  // As registerAdminAccess guards /admin/*: admin keys only, once either kind of key is set.
  const adminKeyed = keyed || config.adminApiKeys.length > 0;
  const builder = new swagger.DocumentBuilder()
    .setOpenAPIVersion('3.1.0')
    .setTitle('nest-offload')
    .setDescription(DESCRIPTION)
    .setVersion('1')
    // why '/': the document is served by the API it describes; an empty `servers` list is invalid.
    .addServer('/');
  if (adminKeyed) {
    builder
      .addBearerAuth({ type: 'http', scheme: 'bearer', description: 'An API key from `API_KEYS`.' }, 'bearer')
      .addApiKey({ type: 'apiKey', in: 'header', name: 'x-api-key', description: 'The same key, in its own header.' }, 'apiKey');
  }
  const document = swagger.SwaggerModule.createDocument(app, builder.build());
  // why `identifier`, not a URL: OpenAPI 3.1 takes the SPDX id, package.json's `license`.
  document.info.license = { name: 'MIT', identifier: 'MIT' } as swagger.OpenAPIObject['info']['license'];
  document.components = { ...document.components, schemas: { ...document.components?.schemas, ...COMMON_SCHEMAS, ...jobTypeSchemas(registry) } as never };
  expandJobTypePaths(document, registry);
  // why an OR of the two schemes: the middleware accepts either header.
  const either = [{ bearer: [] }, { apiKey: [] }];
  for (const [path, item] of Object.entries(document.paths)) {
    const v1 = path.startsWith('/v1/');
    const admin = path.startsWith('/admin/');
    const guarded = (v1 && keyed) || (admin && adminKeyed);
    for (const operation of Object.values(item) as Array<{ security?: unknown; responses?: Record<string, unknown> }>) {
      if (!operation?.responses) continue;
      // why on every operation, `[]` too: the keys guard /v1 and /admin only, and the rest says it is open.
      operation.security = guarded ? either : [];
      const problems = [...(guarded ? KEY_PROBLEMS : []), ...(v1 ? V1_PROBLEMS : [])];
      for (const code of problems) {
        const { status, ...response } = problemResponse(API_ERRORS[code].status, [code]);
        const declared = operation.responses[status] as ProblemResponse | undefined;
        // why merge, not skip: a route may declare other problems of the same status (429 CALLER_BACKLOG_FULL beside RATE_LIMITED).
        if (!declared) operation.responses[status] = response;
        else mergeProblem(declared, response);
      }
    }
  }
  return document;
}

type ProblemResponse = Omit<ReturnType<typeof problemResponse>, 'status'>;

/** Adds `extra`'s problem example and description to a response the route already declares for its status. */
function mergeProblem(declared: ProblemResponse, extra: ProblemResponse): void {
  const into = declared.content['application/problem+json'];
  const [code, example] = Object.entries(extra.content['application/problem+json'].examples)[0];
  if (into.examples[code]) return;
  into.examples[code] = example;
  declared.description = `${declared.description}; ${extra.description}`;
}
