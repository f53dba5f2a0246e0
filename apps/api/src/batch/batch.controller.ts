import { Body, Controller, Headers, Inject, Param, Post, Req, Res } from '@nestjs/common';
import { ApiBody, ApiOperation, ApiResponse, ApiTags } from '../http/openapi.recorder';
import type { ContentObject } from '@nestjs/swagger/dist/interfaces/open-api-spec.interface';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { CONFIG, type Config } from '@app/config';
import { ApiSubmission } from '../http/openapi.decorators';
import { JOB_INPUT, JOB_VIEW, schemaRef } from '../http/openapi.refs';
import { Problem } from '../http/problem';
import { ServerTiming } from '../http/server-timing';
import { isFinal, JobView } from '../jobs/job-view';
import { parsePreferWait } from '../jobs/prefer-wait';
import { parseJobTags } from '../jobs/job-tags';
import { parseStartWithin } from '../jobs/start-within';
import { SubmitHooks } from '../jobs/submit-hooks';
import { callerOf } from '../security/caller';
import { BatchService } from './batch.service';

/** One item of a batch's answer: the status a single POST of it would have had, and its job or problem. */
export type BatchItemReply = { status: number; job: JobView } | { status: number; problem: Problem };

const ITEMS: ContentObject = {
  'application/json': {
    schema: {
      type: 'object',
      required: ['items'],
      properties: {
        items: {
          type: 'array',
          description: 'One entry per item, in order: the status a single POST of it would have had, and its job or its problem.',
          items: {
            oneOf: [
              { type: 'object', required: ['status', 'job'], properties: { status: { type: 'integer', enum: [200, 202] }, job: JOB_VIEW } },
              { type: 'object', required: ['status', 'problem'], properties: { status: { type: 'integer' }, problem: schemaRef('Problem') } },
            ],
          },
        },
      },
    },
  },
};

@ApiTags('jobs')
@Controller('v1/jobs')
export class BatchController {
  constructor(
    private readonly batches: BatchService,
    private readonly hooks: SubmitHooks,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  /**
   * `{"items": [input, …]}` → `{"items": [entry, …]}`, one entry per item in order. 200 when every
   * entry is final (a finished job or a problem), else 202.
   */
  @Post(':type/batch')
  @ApiOperation({
    summary: 'Submit a batch of jobs',
    description:
      'Validates every item (an invalid item fails alone), answers cache hits at once, joins identical work, and enqueues the rest in one round trip to Redis. At most `BATCH_MAX_ITEMS` items; rate limits and `MAX_BACKLOG` count items.',
  })
  @ApiBody({ required: true, schema: { type: 'object', required: ['items'], properties: { items: { type: 'array', items: JOB_INPUT, minItems: 1 } } } })
  @ApiSubmission()
  @ApiResponse({ status: 200, description: 'Every entry final: a finished job or a problem.', content: ITEMS })
  @ApiResponse({ status: 202, description: 'Some jobs queued or running.', content: ITEMS })
  async submit(
    @Param('type') type: string,
    @Body() body: unknown,
    @Headers('prefer') prefer: string | undefined,
    @Headers('callback-url') callbackUrl: string | undefined,
    @Req() req: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<{ items: BatchItemReply[] }> {
    // A refused Callback-Url is a 400 before any item is queued (see JobCallbacks).
    const caller = callerOf(req.raw);
    const { callbacks, idempotency } = this.hooks;
    const callback = callbacks.accept(callbackUrl, caller.scope);
    const timing = new ServerTiming();
    const tags = parseJobTags(req.headers['job-tags'], this.config.jobListing !== 'off');
    const entries = await this.batches.submit(type, body, {
      scope: caller.scope,
      waitSeconds: parsePreferWait(prefer, this.config.maxWaitSeconds),
      submission: { requestId: req.id, startWithinMs: parseStartWithin(req.headers['start-within']), tags },
      timing,
      idempotency: idempotency.keyOf(req.headers['idempotency-key'], caller.scope),
      caller,
      callbackUrl: callback,
    });
    if (callback) {
      const ids = [...new Set(entries.flatMap((entry) => ('view' in entry ? [entry.view.id] : [])))];
      if (ids.length > 0) await callbacks.register(ids, callback, caller.scope, req.id);
    }
    const items = entries.map((entry): BatchItemReply =>
      'problem' in entry ? { status: entry.problem.status, problem: entry.problem } : { status: isFinal(entry.view) ? 200 : 202, job: tags ? { ...entry.view, tags } : entry.view },
    );
    reply.header('server-timing', timing.toString());
    reply.status(items.every((item) => item.status !== 202) ? 200 : 202);
    return { items };
  }
}
