import { Global, Module } from '@nestjs/common';
import { CALLER_SHARES } from '../jobs/submit-hooks';
import { CallerMetrics } from './caller.metrics';
import { CallerShares } from './caller-shares';

/** Fair share between API keys, and its per-key gauges. why global: it lends the core its CALLER_SHARES hook, which the core injects as optional. */
@Global()
@Module({
  providers: [CallerShares, CallerMetrics, { provide: CALLER_SHARES, useExisting: CallerShares }],
  exports: [CALLER_SHARES],
})
export class FairShareModule {}
