import { Module } from '@nestjs/common';
import { JobsModule } from '../jobs/jobs.module';
import { BatchController } from './batch.controller';
import { BatchService } from './batch.service';

/** POST /v1/jobs/{type}/batch: many jobs of one type in one request, through the core's submit pipeline. */
@Module({
  imports: [JobsModule],
  controllers: [BatchController],
  providers: [BatchService],
})
export class BatchModule {}
