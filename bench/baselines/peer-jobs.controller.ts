import { Body, Controller, Get, Headers, NotFoundException, Param, Post, Res } from '@nestjs/common';
import { InjectQueue } from '@nestjs/bullmq';
import { Job, JobsOptions, Queue, QueueEvents } from 'bullmq';
import type { FastifyReply } from 'fastify';
import { parsePreferWait } from '../../apps/api/src/jobs/prefer-wait';
import { BaselineView, iso, validated, viewOfBullJob } from './baseline-jobs';
import { PEER_QUEUE } from './peer.queue';

/** The longest `Prefer: wait` the peers honour, like the template's default MAX_WAIT_SECONDS. */
const MAX_WAIT_S = 60;

/** How long the peers keep finished jobs. */
export const PEER_JOB_OPTIONS: JobsOptions = { removeOnComplete: { age: 3600 }, removeOnFail: { age: 3600 } };

/** The stored job `id` as the peers answer it; `404` when there is none. */
export async function peerView(queue: Queue, id: string): Promise<BaselineView> {
  const [job, state] = await Promise.all([Job.fromId(queue, id), queue.getJobState(id)]);
  if (!job || state === 'unknown') throw new NotFoundException(`No job with id "${id}"`);
  return viewOfBullJob(job, state);
}

/** A just-added job's answer: when the caller asked to wait, after `job.waitUntilFinished` on a QueueEvents; else the stored job. */
export async function peerAnswer(queue: Queue, events: QueueEvents, job: Job, prefer: string | undefined, reply: FastifyReply): Promise<BaselineView> {
  const waitS = parsePreferWait(prefer, MAX_WAIT_S);
  if (waitS > 0) {
    try {
      const result: unknown = await job.waitUntilFinished(events, waitS * 1000);
      reply.status(200);
      return { id: job.id!, type: job.name, status: 'completed', result, attempts: 1, createdAt: iso(job.timestamp)! };
    } catch {
      // Failed, or not finished in time: the stored job says which.
    }
  }
  const view = await peerView(queue, job.id!);
  if (view.status !== 'completed' && view.status !== 'failed') reply.status(202).header('location', `/v1/jobs/${view.id}`);
  return view;
}

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
    const job = await this.queue.add(def.name, input, PEER_JOB_OPTIONS);
    return peerAnswer(this.queue, this.events, job, prefer, reply);
  }

  @Get(':id')
  get(@Param('id') id: string): Promise<BaselineView> {
    return peerView(this.queue, id);
  }
}
