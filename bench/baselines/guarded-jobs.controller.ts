import { Body, Controller, Get, Headers, Inject, Param, Post, Res, UseGuards } from '@nestjs/common';
import { InjectQueue } from '@nestjs/bullmq';
import { CACHE_MANAGER } from '@nestjs/cache-manager';
import { Queue, QueueEvents } from 'bullmq';
import type { Cache } from 'cache-manager';
import type { FastifyReply } from 'fastify';
import { BaselineView, validated } from './baseline-jobs';
import { FailedKeyGuard } from './failed-key.guard';
import { PEER_JOB_OPTIONS, peerAnswer, peerView } from './peer-jobs.controller';
import { CachedResult, resultKey } from './peer-result-cache';
import { PEER_QUEUE } from './peer.queue';

/**
 * The equal-guarantee peer's jobs API: the bare peer's routes behind an API-key guard with a
 * failed-key throttle (FailedKeyGuard), a result cache looked up before the add (`@nestjs/cache-manager`
 * on Redis; the worker fills it), and single flight by BullMQ's `deduplication` on the same key.
 */
@Controller('v1/jobs')
@UseGuards(FailedKeyGuard)
export class GuardedJobsController {
  constructor(
    @InjectQueue(PEER_QUEUE) private readonly queue: Queue,
    private readonly events: QueueEvents,
    @Inject(CACHE_MANAGER) private readonly cache: Cache,
  ) {}

  @Post(':type')
  async submit(
    @Param('type') type: string,
    @Body() body: unknown,
    @Headers('prefer') prefer: string | undefined,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<BaselineView> {
    const { def, input } = validated(type, body);
    const key = resultKey(def, input);
    const hit = await this.cache.get<CachedResult>(key);
    if (hit) {
      reply.status(200);
      return { id: hit.id, type: def.name, status: 'completed', result: hit.result, attempts: 1, createdAt: hit.createdAt };
    }
    // why the result key as the deduplication id: a submission identical to one in flight joins its job.
    const job = await this.queue.add(def.name, input, { ...PEER_JOB_OPTIONS, deduplication: { id: key } });
    return peerAnswer(this.queue, this.events, job, prefer, reply);
  }

  @Get(':id')
  get(@Param('id') id: string): Promise<BaselineView> {
    return peerView(this.queue, id);
  }
}
