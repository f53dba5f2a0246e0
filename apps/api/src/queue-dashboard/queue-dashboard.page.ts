import { Inject, Injectable } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { CONFIG, type Config } from '@app/config';
import { JobRegistry } from '@app/jobs';
import { adminLinks } from '../admin/admin-links';
import { type BrowserPage, ServesBrowserPage } from '../admin/browser-pages';
import { JobQueues } from '../queues/queue.providers';

export const DASHBOARD_PATH = '/admin/queues';

/** Bull Board at /admin/queues, for admin keys: the core guards the path before it calls `serve`. */
@ServesBrowserPage()
@Injectable()
export class QueueDashboardPage implements BrowserPage {
  readonly path = DASHBOARD_PATH;

  constructor(
    private readonly queues: JobQueues,
    private readonly registry: JobRegistry,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  async serve(app: NestFastifyApplication): Promise<void> {
    // why a dynamic import: api.module.ts loads this file with the dashboard off too, and Bull Board
    // costs ~85 ms of CPU and ~8 MB at start, for a page most replicas never serve.
    const { serveQueueDashboard } = await import('./queue-dashboard');
    serveQueueDashboard(app.getHttpAdapter().getInstance(), this.queues, this.registry, this.config, adminLinks(app.get(DiscoveryService)));
  }
}
