import { Global, Module } from '@nestjs/common';
import { JobsModule } from '../jobs/jobs.module';
import { SUBMIT_ONCE } from '../jobs/submit-hooks';
import { Idempotency } from './idempotency';

/** Idempotency-Key on submissions. why global: it lends the core its SUBMIT_ONCE hook, which the core injects as optional. */
@Global()
@Module({
  imports: [JobsModule],
  providers: [Idempotency, { provide: SUBMIT_ONCE, useExisting: Idempotency }],
  exports: [SUBMIT_ONCE],
})
export class IdempotencyModule {}
