import { Module } from '@nestjs/common';
import { JobsModule } from '../jobs/jobs.module';
import { ScheduleRegistrar } from './schedule-registrar';
import { SchedulesController } from './schedules.controller';

/** Job types' declared schedules: registered with BullMQ at start-up, listed at GET /v1/schedules. */
@Module({
  imports: [JobsModule],
  controllers: [SchedulesController],
  providers: [ScheduleRegistrar],
})
export class SchedulesModule {}
