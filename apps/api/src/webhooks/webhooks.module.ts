import { Global, Module } from '@nestjs/common';
import { MetricsModule } from '@app/metrics';
import { JobsModule } from '../jobs/jobs.module';
import { JOB_CALLBACKS } from '../jobs/submit-hooks';
import { WebhookDeliveries } from './webhook-deliveries';
import { WebhookDispatcher } from './webhook-dispatcher';
import { WebhookMetrics } from './webhook.metrics';

/**
 * Signed callbacks on completion: the Callback-Url check and registration, the delivery dispatcher,
 * its metrics. On when WEBHOOK_SECRET and WEBHOOK_ALLOWED_HOSTS are set (each class checks
 * config.webhooks). why global: it lends the core its JOB_CALLBACKS hook, which the core injects as optional.
 */
@Global()
@Module({
  imports: [JobsModule, MetricsModule],
  providers: [WebhookDeliveries, WebhookDispatcher, WebhookMetrics, { provide: JOB_CALLBACKS, useExisting: WebhookDeliveries }],
  exports: [JOB_CALLBACKS],
})
export class WebhooksModule {}
