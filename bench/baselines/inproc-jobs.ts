import { Body, Controller, Get, HttpCode, NotFoundException, Param, Post } from '@nestjs/common';
import { InjectQueue, Processor, WorkerHost } from '@nestjs/bullmq';
import { Job, Queue, QueueEvents } from 'bullmq';
import { baselineJobs, BaselineView, validated, viewOfBullJob } from './baseline-jobs';
import { noProgress } from './no-progress';
import { INPROC_QUEUE } from './baseline.tokens';

interface InprocData {
  input: unknown;
}

/**
 * The other common choice: a BullMQ queue with an @nestjs/bullmq processor registered in the API
 * process itself. The queue adds durability and retries, but the job still runs on the API's loop.
 */
@Processor(INPROC_QUEUE)
export class InprocProcessor extends WorkerHost {
  async process(job: Job<InprocData>): Promise<unknown> {
    const def = baselineJobs.get(job.name);
    if (!def) throw new Error(`unknown job type ${job.name}`);
    return def.run(job.data.input, noProgress);
  }
}

@Controller('v1/jobs')
export class InprocJobsController {
  constructor(
    @InjectQueue(INPROC_QUEUE) private readonly queue: Queue<InprocData>,
    private readonly events: QueueEvents,
  ) {}

  /** Enqueues and answers once the in-process processor has run the job. */
  @Post(':type')
  @HttpCode(200)
  async submit(@Param('type') type: string, @Body() body: unknown): Promise<BaselineView> {
    const { def, input } = validated(type, body);
    const job = await this.queue.add(def.name, { input }, { removeOnComplete: { age: 3600 }, removeOnFail: { age: 3600 } });
    await job.waitUntilFinished(this.events, 60_000);
    return this.get(job.id!);
  }

  @Get(':id')
  async get(@Param('id') id: string): Promise<BaselineView> {
    const [job, state] = await Promise.all([Job.fromId<InprocData>(this.queue, id), this.queue.getJobState(id)]);
    if (!job || state === 'unknown') throw new NotFoundException(`No job with id "${id}"`);
    return viewOfBullJob(job, state);
  }
}
