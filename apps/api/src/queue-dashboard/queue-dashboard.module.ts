import { Module } from '@nestjs/common';
import { QueueDashboardPage } from './queue-dashboard.page';

/** The Bull Board queue dashboard at /admin/queues. Imported only when QUEUE_DASHBOARD=true. */
@Module({
  providers: [QueueDashboardPage],
})
export class QueueDashboardModule {}
