import { Body, Controller, Delete, Get, Headers, HttpCode, Inject, Param, Post, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { CONFIG, type Config } from '@app/config';
import { Lifecycle } from '@app/health';
import { ServerTiming } from '../http/server-timing';
import { parseIdempotencyKey } from '../idempotency/idempotency-key';
import { callerOf } from '../security/caller';
import { JobEvents } from './job-events';
import { JobStream, sawFinalEvent } from './job-stream';
import { isFinal, JobView } from './job-view';
import { JobsService } from './jobs.service';
import { parsePreferWait } from './prefer-wait';

@Controller('v1/jobs')
export class JobsController {
  constructor(
    private readonly jobs: JobsService,
    private readonly events: JobEvents,
    private readonly lifecycle: Lifecycle,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  /**
   * 200 with a finished view (cache hit, or finished within `Prefer: wait`), else 202 and a Location.
   * With an Idempotency-Key, a retry gets the same job (see Idempotency).
   */
  @Post(':type')
  async submit(
    @Param('type') type: string,
    @Body() body: unknown,
    @Headers('prefer') prefer: string | undefined,
    @Req() req: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<JobView> {
    const timing = new ServerTiming();
    const key = parseIdempotencyKey(req.headers['idempotency-key']);
    const view = await this.jobs.submit(type, body, {
      waitSeconds: parsePreferWait(prefer, this.config.maxWaitSeconds),
      submission: { requestId: req.id },
      timing,
      idempotency: key === undefined ? undefined : { scope: callerOf(req.raw).scope, key },
    });
    reply.header('server-timing', timing.toString());
    if (isFinal(view)) reply.status(200);
    else reply.status(202).header('location', `/v1/jobs/${view.id}`);
    return view;
  }

  @Get(':id')
  get(@Param('id') id: string): Promise<JobView> {
    return this.jobs.get(id);
  }

  /** 200 with the cancelled view, or 202 while a running job's worker is still aborting it. */
  @Delete(':id')
  @HttpCode(200)
  async cancel(@Param('id') id: string, @Res({ passthrough: true }) reply: FastifyReply): Promise<JobView> {
    const view = await this.jobs.cancel(id);
    if (!isFinal(view)) reply.status(202);
    return view;
  }

  /**
   * Server-Sent Events. A reconnect whose `Last-Event-ID` is the final event's gets 204 No Content,
   * which tells EventSource to stop instead of reconnecting for ever.
   */
  @Get(':id/events')
  async stream(@Param('id') id: string, @Headers('last-event-id') lastEventId: string | undefined, @Res() reply: FastifyReply): Promise<void> {
    if (sawFinalEvent(lastEventId)) {
      await reply.status(204).send();
      return;
    }
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
    await stream.pipe(reply.raw, view, (state) => this.jobs.get(id, state), this.lifecycle, lastEventId);
  }
}
