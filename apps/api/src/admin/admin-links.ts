import { DiscoveryService } from '@nestjs/core';

/** A page under /admin/ that a capability's controller serves to a browser, as other admin pages link to it. */
export interface AdminLink {
  text: string;
  url: string;
}

/**
 * Marks a capability's controller as serving an admin page (`text/html` at `url`), so that the queue
 * dashboard links to it while it exists. why a decorator the core owns: neither capability imports
 * the other, and either can be removed.
 */
export const LinksAdminPage = DiscoveryService.createDecorator<AdminLink>();

/** The admin pages the application's controllers serve (see LinksAdminPage). */
export function adminLinks(discovery: DiscoveryService): AdminLink[] {
  return discovery.getControllers({ metadataKey: LinksAdminPage.KEY }).map((wrapper) => discovery.getMetadataByDecorator(LinksAdminPage, wrapper)!);
}
