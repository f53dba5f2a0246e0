import { Body, Controller, Get, Headers, NotFoundException, Param, Post, Res } from '@nestjs/common';
import { InjectQueue } from '@nestjs/bullmq';
import { Job, Queue, QueueEvents } from 'bullmq';
import type { FastifyReply } from 'fastify';
import { parsePreferWait } from '../../apps/api/src/jobs/prefer-wait';
import { BaselineView, iso, validated, viewOfBullJob } from './baseline-jobs';
import { PEER_QUEUE } from './peer.queue';

/** The longest `Prefer: wait` the peer honours, like the template's default MAX_WAIT_SECONDS. */
const MAX_WAIT_S = 60;

/**
 * The peer's jobs API, written the way the NestJS docs and boilerplates write it: validate the body,
 * `queue.add`, and when the caller asked to wait, `job.waitUntilFinished` on a QueueEvents.
 * Same routes and body shapes as the template, so one client drives both.
 */
@Controller('v1/jobs')
export class PeerJobsController {
  constructor(
    @InjectQueue(PEER_QUEUE) private readonly queue: Queue,
    private readonly events: QueueEvents,
  ) {}

  @Post(':type')
  async submit(
    @Param('type') type: string,
    @Body() body: unknown,
    @Headers('prefer') prefer: string | undefined,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<BaselineView> {
    // why: the type's zod schema stands in for the DTO + ValidationPipe a boilerplate has (and it
    // applies its defaults, so the worker gets the input the template's `run` gets).
    const { def, input } = validated(type, body);
    const job = await this.queue.add(def.name, input, { removeOnComplete: { age: 3600 }, removeOnFail: { age: 3600 } });
    const waitS = parsePreferWait(prefer, MAX_WAIT_S);
    if (waitS > 0) {
      try {
        const result: unknown = await job.waitUntilFinished(this.events, waitS * 1000);
        reply.status(200);
        return { id: job.id!, type: job.name, status: 'completed', result, attempts: 1, createdAt: iso(job.timestamp)! };
      } catch {
        // Failed, or not finished in time: the stored job says which.
      }
    }
    const view = await this.get(job.id!);
    if (view.status !== 'completed' && view.status !== 'failed') reply.status(202).header('location', `/v1/jobs/${view.id}`);
    return view;
  }

  @Get(':id')
  async get(@Param('id') id: string): Promise<BaselineView> {
    const [job, state] = await Promise.all([Job.fromId(this.queue, id), this.queue.getJobState(id)]);
    if (!job || state === 'unknown') throw new NotFoundException(`No job with id "${id}"`);
    return viewOfBullJob(job, state);
  }
}
