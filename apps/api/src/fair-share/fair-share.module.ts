import { Global, Module } from '@nestjs/common';
import { CALLER_SHARES } from '../jobs/submit-hooks';
import { CallerMetrics } from './caller.metrics';
import { CallersController } from './callers.controller';
import { CallerShares } from './caller-shares';

/** Fair share between API keys, its per-key gauges and its admin view (GET /admin/callers). why global: it lends the core its CALLER_SHARES hook, which the core injects as optional. */
@Global()
@Module({
  controllers: [CallersController],
  providers: [CallerShares, CallerMetrics, { provide: CALLER_SHARES, useExisting: CallerShares }],
  exports: [CALLER_SHARES],
})
export class FairShareModule {}
