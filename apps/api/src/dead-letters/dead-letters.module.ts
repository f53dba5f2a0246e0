import { Global, Module } from '@nestjs/common';
import { MetricsModule } from '@app/metrics';
import { JOB_ARCHIVE } from '../jobs/job-archive';
import { JobsModule } from '../jobs/jobs.module';
import { DeadLetterMetrics } from './dead-letter.metrics';
import { DeadLetters } from './dead-letters';
import { DeadLettersController } from './dead-letters.controller';

/**
 * Dead letters: GET /admin/dead-letters and POST /admin/dead-letters/replay over what the workers
 * keep (libs/queue/src/dead-letters.ts). why global: it lends the core its JOB_ARCHIVE hook (a job
 * read after BullMQ dropped it), which the core injects as optional.
 */
@Global()
@Module({
  imports: [JobsModule, MetricsModule],
  controllers: [DeadLettersController],
  providers: [DeadLetters, DeadLetterMetrics, { provide: JOB_ARCHIVE, useExisting: DeadLetters }],
  exports: [JOB_ARCHIVE],
})
export class DeadLettersModule {}
