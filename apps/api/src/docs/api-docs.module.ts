import { Module } from '@nestjs/common';
import { ApiDocsPage } from './api-docs.page';

/** The OpenAPI document (/docs-json) and Swagger UI (/docs), built from the code. Imported only when API_DOCS=true. */
@Module({
  providers: [ApiDocsPage],
})
export class ApiDocsModule {}
