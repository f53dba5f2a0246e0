import { Inject, Injectable } from '@nestjs/common';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { SwaggerModule } from '@nestjs/swagger';
import { CONFIG, type Config } from '@app/config';
import { JobRegistry } from '@app/jobs';
import { type BrowserPage, ServesBrowserPage } from '../admin/browser-pages';
import { buildOpenApiDocument } from './openapi.document';
import { describeOperationRoutes } from './operations.openapi';

/**
 * The OpenAPI document at /docs-json and Swagger UI at /docs (its assets from swagger-ui-dist, no
 * CDN). Behind the API keys: the core guards the path before it calls `serve`.
 */
@ServesBrowserPage()
@Injectable()
export class ApiDocsPage implements BrowserPage {
  readonly path = '/docs';

  constructor(
    private readonly registry: JobRegistry,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  serve(app: NestFastifyApplication): void {
    describeOperationRoutes();
    // why now and not on the first request: a broken declaration stops the start, not a page view.
    const document = buildOpenApiDocument(app, this.registry, this.config);
    SwaggerModule.setup('docs', app, document, {
      raw: ['json'],
      customSiteTitle: 'nest-offload API',
      // why no validator: Swagger UI would send the document to an outside service to check it.
      swaggerOptions: { validatorUrl: null, displayRequestDuration: true, tryItOutEnabled: true },
    });
  }
}
