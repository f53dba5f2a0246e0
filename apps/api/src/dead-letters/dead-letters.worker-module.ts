import { Module } from '@nestjs/common';
import { keepDeadLetter } from '@app/queue';
import { FAILED_JOBS, type FailedJobs } from '../../../worker/src/processor/failed-jobs';

/**
 * The workers' half of dead letters: they keep each job that fails for good (keepDeadLetter), which
 * the API half lists and replays. why in this folder, wired into the worker's module: the
 * capability's removal (npm run remove:capability) then takes the writer with the readers, and no
 * worker goes on writing dead letters that no route lists.
 */
@Module({
  providers: [{ provide: FAILED_JOBS, useValue: { keep: keepDeadLetter } satisfies FailedJobs }],
  exports: [FAILED_JOBS],
})
export class DeadLettersModule {}
