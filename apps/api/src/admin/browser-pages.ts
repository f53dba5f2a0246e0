import { DiscoveryService } from '@nestjs/core';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { Config } from '@app/config';
import type { RedisClient } from '@app/redis';
import { registerAdminAccess } from './admin-access';

/**
 * A page for people in a browser that a capability serves (the API docs, the queue dashboard). The
 * core finds each one, puts its path behind the keys, then has it add its routes. why the core calls
 * it, not the capability's own onModuleInit: Swagger needs the application itself, and the guard
 * must know the pages (to offer sign-in) and be in place before their routes are added.
 */
export interface BrowserPage {
  /** Where it is served: `/docs…` (client keys too) or under `/admin/` (admin keys only); see registerAdminAccess. */
  readonly path: string;
  serve(app: NestFastifyApplication): void | Promise<void>;
}

/** Marks a capability's provider as its BrowserPage, for serveBrowserPages to find. */
export const ServesBrowserPage = DiscoveryService.createDecorator<void>();

/** Guards /docs* and /admin/*, with sign-in for the pages found, then serves each page (in the order their modules are imported). */
export async function serveBrowserPages(app: NestFastifyApplication, config: Config, redis: RedisClient): Promise<void> {
  const pages = app
    .get(DiscoveryService)
    .getProviders({ metadataKey: ServesBrowserPage.KEY })
    .map((wrapper) => wrapper.instance as BrowserPage);
  registerAdminAccess(app.getHttpAdapter().getInstance(), config, redis, pages.map((page) => page.path));
  for (const page of pages) await page.serve(app);
}
