import { Body, Controller, Headers, Inject, Param, Post, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { CONFIG, type Config } from '@app/config';
import { Problem } from '../http/problem';
import { ServerTiming } from '../http/server-timing';
import { parseIdempotencyKey } from '../idempotency/idempotency-key';
import { isFinal, JobView } from '../jobs/job-view';
import { parsePreferWait } from '../jobs/prefer-wait';
import { callerOf } from '../security/caller';
import { BatchService } from './batch.service';

/** One item of a batch's answer: the status a single POST of it would have had, and its job or problem. */
export type BatchItemReply = { status: number; job: JobView } | { status: number; problem: Problem };

@Controller('v1/jobs')
export class BatchController {
  constructor(
    private readonly batches: BatchService,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  /**
   * `{"items": [input, …]}` → `{"items": [entry, …]}`, one entry per item in order. 200 when every
   * entry is final (a finished job or a problem), else 202.
   */
  @Post(':type/batch')
  async submit(
    @Param('type') type: string,
    @Body() body: unknown,
    @Headers('prefer') prefer: string | undefined,
    @Req() req: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<{ items: BatchItemReply[] }> {
    const timing = new ServerTiming();
    const key = parseIdempotencyKey(req.headers['idempotency-key']);
    const caller = callerOf(req.raw);
    const entries = await this.batches.submit(type, body, {
      waitSeconds: parsePreferWait(prefer, this.config.maxWaitSeconds),
      submission: { requestId: req.id },
      timing,
      idempotency: key === undefined ? undefined : { scope: caller.scope, key },
      caller,
    });
    const items = entries.map((entry): BatchItemReply =>
      'problem' in entry ? { status: entry.problem.status, problem: entry.problem } : { status: isFinal(entry.view) ? 200 : 202, job: entry.view },
    );
    reply.header('server-timing', timing.toString());
    reply.status(items.every((item) => item.status !== 202) ? 200 : 202);
    return { items };
  }
}
