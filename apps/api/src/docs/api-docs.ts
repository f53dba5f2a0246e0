import type { INestApplication } from '@nestjs/common';
import { SwaggerModule } from '@nestjs/swagger';
import type { Config } from '@app/config';
import type { JobRegistry } from '@app/jobs';
import { buildOpenApiDocument } from './openapi.document';
import { describeOperationRoutes } from './operations.openapi';

/**
 * The OpenAPI document at /docs-json and Swagger UI at /docs (its assets from swagger-ui-dist, no
 * CDN). Behind the API keys through registerAdminAccess, which must be registered first.
 */
export function serveApiDocs(app: INestApplication, registry: JobRegistry, config: Config): void {
  describeOperationRoutes();
  // why now and not on the first request: a broken declaration stops the start, not a page view.
  const document = buildOpenApiDocument(app, registry, config);
  SwaggerModule.setup('docs', app, document, {
    raw: ['json'],
    customSiteTitle: 'nest-offload API',
    // why no validator: Swagger UI would send the document to an outside service to check it.
    swaggerOptions: { validatorUrl: null, displayRequestDuration: true, tryItOutEnabled: true },
  });
}
