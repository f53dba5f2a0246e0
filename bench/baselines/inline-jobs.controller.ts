import { randomUUID } from 'node:crypto';
import { Body, Controller, Get, HttpCode, Inject, NotFoundException, Param, Post } from '@nestjs/common';
import type IORedis from 'ioredis';
import { BaselineView, iso, validated } from './baseline-jobs';
import { noProgress } from './no-progress';
import { BASELINE_PREFIX, BASELINE_REDIS } from './baseline.tokens';

/**
 * The baseline a user would otherwise write: the CPU work runs in the request handler, on the event
 * loop that serves every other request too. Finished jobs are kept in Redis for GET, like the template.
 */
@Controller('v1/jobs')
export class InlineJobsController {
  constructor(
    @Inject(BASELINE_REDIS) private readonly redis: IORedis,
    @Inject(BASELINE_PREFIX) private readonly prefix: string,
  ) {}

  @Post(':type')
  @HttpCode(200)
  async submit(@Param('type') type: string, @Body() body: unknown): Promise<BaselineView> {
    const { def, input } = validated(type, body);
    const startedAt = Date.now();
    const result = await def.run(input, noProgress);
    const view: BaselineView = {
      id: randomUUID(),
      type: def.name,
      status: 'completed',
      result,
      attempts: 1,
      createdAt: iso(startedAt)!,
      startedAt: iso(startedAt),
      finishedAt: iso(Date.now()),
    };
    await this.redis.set(`${this.prefix}:job:${view.id}`, JSON.stringify(view), 'EX', 3600);
    return view;
  }

  @Get(':id')
  async get(@Param('id') id: string): Promise<BaselineView> {
    const raw = await this.redis.get(`${this.prefix}:job:${id}`);
    if (raw === null) throw new NotFoundException(`No job with id "${id}"`);
    return JSON.parse(raw) as BaselineView;
  }
}
