import { Inject, Injectable } from '@nestjs/common';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { CONFIG, type Config } from '@app/config';
import { JobRegistry } from '@app/jobs';
import { type BrowserPage, ServesBrowserPage } from '../admin/browser-pages';

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

  async serve(app: NestFastifyApplication): Promise<void> {
    // why a dynamic import: api.module.ts loads this file with the docs off too, and @nestjs/swagger
    // is ~500 modules the controllers' decorators no longer need (see http/openapi.recorder.ts).
    const [{ SwaggerModule }, { buildOpenApiDocument }] = await Promise.all([import('@nestjs/swagger'), import('./openapi.document')]);
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
