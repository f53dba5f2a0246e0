import { Body, Controller, Delete, Get, Headers, HttpCode, Inject, Param, Post, Req, Res } from '@nestjs/common';
import { ApiBody, ApiOperation, ApiParam, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { CONFIG, type Config } from '@app/config';
import { Lifecycle } from '@app/health';
import { JOB_INPUT, JOB_VIEW } from '../docs/job-types.openapi';
import { ApiPreferWait, ApiProblems } from '../docs/openapi.decorators';
import { ServerTiming } from '../http/server-timing';
import { WebhookDeliveries } from '../webhooks/webhook-deliveries';
import { JobEvents } from './job-events';
import { JobStream } from './job-stream';
import { isFinal, JobView } from './job-view';
import { JobsService } from './jobs.service';
import { parsePreferWait } from './prefer-wait';

const JOB_ID = ApiParam({ name: 'id', description: 'The id a submission answered with.', schema: { type: 'string' } });
const VIEW = { 'application/json': { schema: JOB_VIEW } };

@ApiTags('jobs')
@Controller('v1/jobs')
export class JobsController {
  constructor(
    private readonly jobs: JobsService,
    private readonly events: JobEvents,
    private readonly lifecycle: Lifecycle,
    private readonly webhooks: WebhookDeliveries,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  /** 200 with a finished view (cache hit, or finished within `Prefer: wait`), else 202 and a Location. */
  @Post(':type')
  @ApiOperation({
    summary: 'Submit a job',
    description: 'Runs the job, or joins an identical one queued or running, or answers from the result cache. `Server-Timing` says where the time went.',
  })
  @ApiBody({ required: true, schema: JOB_INPUT })
  @ApiPreferWait()
  @ApiResponse({ status: 200, description: 'Finished: a cache hit (`cached: true`), or finished within `Prefer: wait`.', content: VIEW })
  @ApiResponse({
    status: 202,
    description: 'Queued or running.',
    headers: { Location: { description: '`/v1/jobs/{id}`', schema: { type: 'string' } } },
    content: VIEW,
  })
  @ApiProblems('INVALID_INPUT', 'MALFORMED_REQUEST', 'UNKNOWN_JOB_TYPE', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE', 'QUEUE_UNAVAILABLE', 'BACKLOG_FULL', 'SHUTTING_DOWN')
  async submit(
    @Param('type') type: string,
    @Body() body: unknown,
    @Headers('prefer') prefer: string | undefined,
    @Headers('callback-url') callbackUrl: string | undefined,
    @Req() req: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<JobView> {
    // Webhooks: a refused Callback-Url is a 400 before any work is queued (see WebhookDeliveries).
    const callback = this.webhooks.accept(callbackUrl);
    const timing = new ServerTiming();
    const view = await this.jobs.submit(type, body, {
      waitSeconds: parsePreferWait(prefer, this.config.maxWaitSeconds),
      requestId: req.id,
      timing,
    });
    if (callback) await this.webhooks.register([view.id], callback, req.id);
    reply.header('server-timing', timing.toString());
    if (isFinal(view)) reply.status(200);
    else reply.status(202).header('location', `/v1/jobs/${view.id}`);
    return view;
  }

  @Get(':id')
  @ApiOperation({ summary: 'Read a job', description: 'Also results served from the cache after BullMQ dropped the job.' })
  @JOB_ID
  @ApiResponse({ status: 200, description: 'The job.', content: VIEW })
  @ApiProblems('JOB_NOT_FOUND', 'QUEUE_UNAVAILABLE')
  get(@Param('id') id: string): Promise<JobView> {
    return this.jobs.get(id);
  }

  /** 200 with the cancelled view, or 202 while a running job's worker is still aborting it. */
  @Delete(':id')
  @HttpCode(200)
  @ApiOperation({ summary: 'Cancel a job', description: 'A queued job is removed; a running one is aborted in its worker thread, wherever it runs.' })
  @JOB_ID
  @ApiResponse({ status: 200, description: 'Cancelled.', content: VIEW })
  @ApiResponse({ status: 202, description: 'Running; its worker has not confirmed the abort yet.', content: VIEW })
  @ApiProblems('JOB_NOT_FOUND', 'JOB_ALREADY_FINISHED', 'QUEUE_UNAVAILABLE')
  async cancel(@Param('id') id: string, @Res({ passthrough: true }) reply: FastifyReply): Promise<JobView> {
    const view = await this.jobs.cancel(id);
    if (!isFinal(view)) reply.status(202);
    return view;
  }

  @Get(':id/events')
  @ApiOperation({
    summary: 'Stream a job’s events',
    description:
      'Server-Sent Events: `progress` (data `{id, progress}`) while it runs, then one of `completed`, `failed` or `cancelled` whose data is the final job view (`JobView`), then the stream ends. Comments (`: keep-alive`) every 15 s. A draining replica ends the stream without a final event: reconnect.',
  })
  @JOB_ID
  @ApiResponse({
    status: 200,
    description: 'The event stream.',
    content: {
      'text/event-stream': {
        schema: { type: 'string' },
        example: 'event: progress\ndata: {"id":"6f1c…","progress":42}\n\nevent: completed\ndata: {"id":"6f1c…","type":"sum","status":"completed",…}\n\n',
      },
    },
  })
  @ApiProblems('JOB_NOT_FOUND', 'QUEUE_UNAVAILABLE')
  async stream(@Param('id') id: string, @Res() reply: FastifyReply): Promise<void> {
    const stream = new JobStream(this.events, id);
    const view = await this.jobs.get(id).catch((error: unknown) => {
      stream.close();
      throw error; // an unknown id is a 404 problem, before the stream starts
    });
    reply.hijack();
    reply.raw.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
      'x-request-id': reply.request.id,
    });
    await stream.pipe(reply.raw, view, (state) => this.jobs.get(id, state), this.lifecycle);
  }
}
