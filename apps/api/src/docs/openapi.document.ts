import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { JobRegistry } from '@app/jobs';
import { API_ERRORS, ApiErrorCode } from '../http/api-error';
import { AUTH_FAILURES_PER_MINUTE } from '../security/auth-failures';
import { jobTypeSchemas, expandJobTypePaths } from './job-types.openapi';
import { problemResponse } from './openapi.decorators';
import { COMMON_SCHEMAS } from './openapi.schemas';

const DESCRIPTION = `CPU jobs off the event loop: submit a job, then read, stream or cancel it.

Every \`/v1\` route needs an API key when the server has \`API_KEYS\` set: \`Authorization: Bearer <key>\`
or \`x-api-key: <key>\` (use **Authorize** to try them here); an admin key (\`ADMIN_API_KEYS\`) gets 403.
An address that sent ${AUTH_FAILURES_PER_MINUTE} wrong keys gets 429 with \`Retry-After\` for every key, right or wrong, until
its tries refill (${AUTH_FAILURES_PER_MINUTE} a minute). Errors are \`application/problem+json\` with a
stable \`code\`. Each response carries \`x-request-id\` (yours, when you send a plain token).`;

/**
 * What the access middleware may answer on every /v1 route (see security/access.middleware.ts): 503
 * when, with keys, it cannot reach Redis to count a wrong key or see its address's tries.
 */
const V1_PROBLEMS: ApiErrorCode[] = ['UNAUTHORIZED', 'FORBIDDEN', 'RATE_LIMITED', 'QUEUE_UNAVAILABLE'];

/**
 * The OpenAPI 3.1 document of the API, from the code: routes and their decorators (scanned by
 * @nestjs/swagger), job types from the registry (one path per type for routes with `{type}`), error
 * shapes from API_ERRORS.
 */
export function buildOpenApiDocument(app: INestApplication, registry: JobRegistry): OpenAPIObject {
  const config = new DocumentBuilder()
    .setOpenAPIVersion('3.1.0')
    .setTitle('nest-offload')
    .setDescription(DESCRIPTION)
    .setVersion('1')
    .addBearerAuth({ type: 'http', scheme: 'bearer', description: 'An API key from `API_KEYS`.' }, 'bearer')
    .addApiKey({ type: 'apiKey', in: 'header', name: 'x-api-key', description: 'The same key, in its own header.' }, 'apiKey')
    .build();
  const document = SwaggerModule.createDocument(app, config);
  document.components = { ...document.components, schemas: { ...document.components?.schemas, ...COMMON_SCHEMAS, ...jobTypeSchemas(registry) } as never };
  expandJobTypePaths(document, registry);
  for (const [path, item] of Object.entries(document.paths)) {
    if (!path.startsWith('/v1/')) continue;
    for (const operation of Object.values(item) as Array<{ security?: unknown; responses?: Record<string, unknown> }>) {
      if (!operation?.responses) continue;
      // why both: an OR of the two schemes, as the middleware accepts either header.
      operation.security = [{ bearer: [] }, { apiKey: [] }];
      for (const code of V1_PROBLEMS) {
        const { status, ...response } = problemResponse(API_ERRORS[code].status, [code]);
        operation.responses[status] ??= response;
      }
    }
  }
  return document;
}
