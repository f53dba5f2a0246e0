import { Processor, WorkerHost } from '@nestjs/bullmq';
import { Job, UnrecoverableError } from 'bullmq';
import { baselineJobs } from './baseline-jobs';
import { noProgress } from './no-progress';
import { PEER_QUEUE, peerEnv } from './peer.queue';

/**
 * The peer's consumer: an @nestjs/bullmq processor calling the same job `run` as the template (the
 * bench's bench-sum and bench-pbkdf2, or a type of libs/jobs) on the worker process's event loop,
 * `CONCURRENCY` jobs at a time.
 * why the decorator reads the env: @nestjs/bullmq takes worker options from it, before any DI.
 */
@Processor(PEER_QUEUE, { concurrency: peerEnv().concurrency })
export class PeerProcessor extends WorkerHost {
  async process(job: Job): Promise<unknown> {
    const def = baselineJobs.get(job.name);
    if (!def) throw new UnrecoverableError(`unknown job type ${job.name}`);
    return def.run(job.data, noProgress);
  }
}
