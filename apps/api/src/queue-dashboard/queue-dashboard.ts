import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter as BullBoardFastify } from '@bull-board/fastify';
import type { FastifyInstance } from 'fastify';
import type { Config } from '@app/config';
import type { JobRegistry } from '@app/jobs';
import type { AdminLink } from '../admin/admin-links';
import type { JobQueues } from '../queues/queue.providers';
import { validateDashboardWrites } from './dashboard-writes';
import { DASHBOARD_PATH } from './queue-dashboard.page';

/**
 * Bull Board at /admin/queues: every queue the registered types use, with the types it carries.
 * Read-only unless QUEUE_DASHBOARD_READONLY=false (Bull Board refuses changes to a read-only queue
 * itself). Behind the admin keys: the core guards the path before QueueDashboardPage calls this.
 * `links`: the other admin pages (LinksAdminPage), in its header beside the API docs.
 */
export function serveQueueDashboard(fastify: FastifyInstance, queues: JobQueues, registry: JobRegistry, config: Config, links: readonly AdminLink[] = []): void {
  const readOnlyMode = config.queueDashboardReadOnly;
  if (!readOnlyMode) validateDashboardWrites(fastify, DASHBOARD_PATH, queues, registry, config);
  const server = new BullBoardFastify().setBasePath(DASHBOARD_PATH);
  const typesOf = (queue: string) => registry.list().filter((def) => def.queue === queue).map((def) => def.name);
  createBullBoard({
    queues: queues.list().map((queue) => new BullMQAdapter(queue, { readOnlyMode, allowRetries: !readOnlyMode, description: `Job types: ${typesOf(queue.name).join(', ')}` })),
    serverAdapter: server,
    options: {
      uiConfig: {
        boardTitle: 'nest-offload',
        hideDocsLink: true,
        miscLinks: [...(config.apiDocs ? [{ text: 'API docs', url: '/docs' }] : []), ...links, ...(config.apiKeys.length > 0 ? [{ text: 'Sign out', url: '/admin/login' }] : [])],
      },
    },
  });
  void fastify.register(server.registerPlugin(), { prefix: DASHBOARD_PATH });
}
