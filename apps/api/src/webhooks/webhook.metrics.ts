import { Injectable } from '@nestjs/common';
import { Counter, Histogram, Registry } from 'prom-client';
import { METRIC_PREFIX } from '@app/metrics';
import type { AttemptOutcome } from './webhook-sender';

/** How a delivery ended for good. */
export type DeliveryOutcome = 'delivered' | 'gave_up' | 'refused' | 'job_unknown' | 'withdrawn';

/**
 * `webhook_attempts_total{outcome}` (every POST: delivered, http_3xx, http_4xx, http_5xx, gone,
 * timeout, network, refused), `webhook_attempt_seconds` and `webhook_deliveries_total{outcome}`
 * (each callback once: delivered, gave_up, refused, job_unknown, withdrawn).
 */
@Injectable()
export class WebhookMetrics {
  private readonly attempts: Counter<'outcome'>;
  private readonly seconds: Histogram;
  private readonly deliveries: Counter<'outcome'>;

  constructor(registry: Registry) {
    this.attempts = new Counter({
      name: `${METRIC_PREFIX}webhook_attempts_total`,
      help: 'Webhook POSTs by outcome (delivered is a 2xx answer)',
      labelNames: ['outcome'],
      registers: [registry],
    });
    this.seconds = new Histogram({
      name: `${METRIC_PREFIX}webhook_attempt_seconds`,
      help: 'Time from sending a webhook to its answer (or failure)',
      buckets: [0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 15, 30],
      registers: [registry],
    });
    this.deliveries = new Counter({
      name: `${METRIC_PREFIX}webhook_deliveries_total`,
      help: 'Webhook deliveries ended for good, by outcome (gave_up: every attempt failed, or the receiver answered 410; withdrawn: its caller cancelled its interest)',
      labelNames: ['outcome'],
      registers: [registry],
    });
  }

  attempt(outcome: AttemptOutcome, ms: number): void {
    this.attempts.inc({ outcome });
    this.seconds.observe(ms / 1000);
  }

  ended(outcome: DeliveryOutcome): void {
    this.deliveries.inc({ outcome });
  }
}
