import type { Provider } from '@nestjs/common';
import { WebhookDeliveries } from './webhook-deliveries';
import { WebhookWorker } from './webhook-worker';
import { WebhookMetrics } from './webhook.metrics';

/** Signed callbacks on completion: the Callback-Url check and registration, the delivery worker, its metrics. */
export const webhookProviders: Provider[] = [WebhookDeliveries, WebhookWorker, WebhookMetrics];
