import { Controller, Delete, Get, Headers, HttpCode, Inject, Param, Post, Req, Res } from '@nestjs/common';
import { ApiBody, ApiHeader, ApiOperation, ApiParam, ApiResponse, ApiTags } from '../http/openapi.recorder';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FileRef } from '@app/blobs';
import { CONFIG, type Config } from '@app/config';
import { Lifecycle } from '@app/health';
import { FileIntake } from '../files/file-intake';
import { isMultipart } from '../files/multipart-body';
import { ApiError } from '../http/api-error';
import { ApiProblems, ApiSubmission } from '../http/openapi.decorators';
import { JOB_INPUT, JOB_VIEW } from '../http/openapi.refs';
import { ServerTiming } from '../http/server-timing';
import { callerOf } from '../security/caller';
import { JobCancels } from './job-cancels';
import { JobNotices } from './job-notices';
import { JobReads } from './job-reads';
import { JobStream, sawFinalEvent } from './job-stream';
import { isFinal, JobView } from './job-view';
import { JobsService } from './jobs.service';
import { parsePreferWait } from './prefer-wait';
import { parseJobTags } from './job-tags';
import { parseStartWithin } from './start-within';
import { SubmitHooks } from './submit-hooks';

type FileRefs = Record<string, FileRef>;

const JOB_ID = ApiParam({ name: 'id', description: 'The id a submission answered with.', schema: { type: 'string' } });
const VIEW = { 'application/json': { schema: JOB_VIEW } };

@ApiTags('jobs')
@Controller('v1/jobs')
export class JobsController {
  constructor(
    private readonly jobs: JobsService,
    private readonly reads: JobReads,
    private readonly cancels: JobCancels,
    private readonly hooks: SubmitHooks,
    private readonly notices: JobNotices,
    private readonly lifecycle: Lifecycle,
    private readonly intake: FileIntake,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  /**
   * 200 with a finished view (cache hit, or finished within `Prefer: wait`), else 202 and a Location.
   * With an Idempotency-Key, a retry gets the same job (see Idempotency).
   */
  @Post(':type')
  @ApiOperation({
    summary: 'Submit a job',
    description: 'Runs the job, or joins an identical one queued or running, or answers from the result cache. `Server-Timing` says where the time went.',
  })
  @ApiBody({ required: true, schema: JOB_INPUT })
  @ApiSubmission('BACKLOG_FULL', 'CALLER_BACKLOG_FULL')
  @ApiResponse({ status: 200, description: 'Finished: a cache hit (`cached: true`), or finished within `Prefer: wait`.', content: VIEW })
  @ApiResponse({
    status: 202,
    description: 'Queued or running.',
    headers: { Location: { description: '`/v1/jobs/{id}`', schema: { type: 'string' } } },
    content: VIEW,
  })
  async submit(
    @Param('type') type: string,
    @Req() req: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<JobView> {
    // why: headers and body read off the request, not one parameter decorator each: a cache hit is
    // mostly framework work, and every injected parameter is a call on every request.
    const headers = req.headers;
    // A refused Callback-Url is a 400 before any work is queued (see JobCallbacks).
    const { scope } = callerOf(req.raw);
    const { callbacks, idempotency } = this.hooks;
    const callback = callbacks.accept(headers['callback-url'] as string | undefined, scope);
    const timing = new ServerTiming();
    const tags = parseJobTags(headers['job-tags'], this.config.jobListing !== 'off');
    const { body, files } = await this.bodyOf(type, req);
    const submitted = await this.jobs.submit(type, body, {
      scope,
      waitSeconds: parsePreferWait(headers.prefer, this.config.maxWaitSeconds),
      submission: { requestId: req.id, startWithinMs: parseStartWithin(headers['start-within']), tags },
      timing,
      idempotency: idempotency.keyOf(headers['idempotency-key'], scope),
      callbackUrl: callback,
      files,
    });
    // why a copy: a cached view is shared by every caller.
    const view = tags ? { ...submitted, tags } : submitted;
    if (callback) await callbacks.register([view.id], callback, scope, req.id);
    if (isFinal(view)) reply.code(200).header('server-timing', timing.toString());
    else reply.code(202).headers({ 'server-timing': timing.toString(), location: `/v1/jobs/${view.id}` });
    return view;
  }

  /** The JSON body; or, for a type that takes files, the multipart body read by FileIntake (files stored). */
  private async bodyOf(type: string, req: FastifyRequest): Promise<{ body: unknown; files?: FileRefs }> {
    const multipart = isMultipart(req.headers['content-type']);
    // why only then: a JSON submission of a type without files costs nothing more than before.
    if (!multipart && !this.jobs.takesFiles(type)) return { body: req.body };
    const def = this.jobs.definition(type);
    const names = Object.keys(def.files);
    if (names.length === 0) throw new ApiError('UNSUPPORTED_MEDIA_TYPE', `"${def.name}" takes no files; send its input as application/json`);
    if (!multipart) {
      throw new ApiError('UNSUPPORTED_MEDIA_TYPE', `"${def.name}" takes files: send multipart/form-data with a part "input" (its JSON input) and ${names.map((n) => `"${n}"`).join(', ')}`);
    }
    return this.intake.read(def, req.raw);
  }

  @Get(':id')
  @ApiOperation({ summary: 'Read a job', description: 'Also results served from the cache after BullMQ dropped the job.' })
  @JOB_ID
  @ApiResponse({ status: 200, description: 'The job.', content: VIEW })
  @ApiProblems('JOB_NOT_FOUND', 'QUEUE_UNAVAILABLE')
  get(@Param('id') id: string, @Req() req: FastifyRequest): Promise<JobView> {
    return this.reads.getFor(id, callerOf(req.raw).scope);
  }

  /** 200 with the cancelled view, or 202 while a running job's worker is still aborting it. */
  @Delete(':id')
  @HttpCode(200)
  @ApiOperation({ summary: 'Cancel a job', description: 'A queued job is removed; a running one is aborted in its worker thread, wherever it runs.' })
  @JOB_ID
  @ApiResponse({ status: 200, description: 'Cancelled.', content: VIEW })
  @ApiResponse({ status: 202, description: 'Running; its worker has not confirmed the abort yet.', content: VIEW })
  @ApiProblems('JOB_NOT_FOUND', 'JOB_ALREADY_FINISHED', 'QUEUE_UNAVAILABLE')
  async cancel(@Param('id') id: string, @Req() req: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply): Promise<JobView> {
    const view = await this.cancels.cancel(id, callerOf(req.raw).scope);
    if (!isFinal(view)) reply.status(202);
    return view;
  }

  /**
   * Server-Sent Events. A reconnect whose `Last-Event-ID` is the final event's gets 204 No Content,
   * which tells EventSource to stop instead of reconnecting for ever.
   */
  @Get(':id/events')
  @ApiOperation({
    summary: 'Stream a job’s events',
    description:
      'Server-Sent Events: `retry: 1000` first, then `progress` (data `{id, progress}`, event id the percentage) while it runs, then one of `completed`, `failed` or `cancelled` whose data is the final job view (`JobView`) and whose event id is `final`, then the stream ends. Comments (`: keep-alive`) every 15 s. A draining replica ends the stream without a final event: reconnect with `Last-Event-ID`, to any replica; progress resumes after that id, and a reconnect with `Last-Event-ID: final` gets `204` (EventSource then stops).',
  })
  @JOB_ID
  @ApiHeader({ name: 'Last-Event-ID', required: false, description: 'Sent by EventSource on a reconnect: `final` gets 204; a percentage resumes progress after it.' })
  @ApiResponse({
    status: 200,
    description: 'The event stream.',
    content: {
      'text/event-stream': {
        schema: { type: 'string' },
        example: 'retry: 1000\n\nid: 42\nevent: progress\ndata: {"id":"6f1c…","progress":42}\n\nid: final\nevent: completed\ndata: {"id":"6f1c…","type":"fibonacci","status":"completed",…}\n\n',
      },
    },
  })
  @ApiResponse({ status: 204, description: 'A reconnect after the final event (`Last-Event-ID: final`): nothing more will come.' })
  @ApiProblems('JOB_NOT_FOUND', 'QUEUE_UNAVAILABLE')
  async stream(@Param('id') id: string, @Headers('last-event-id') lastEventId: string | undefined, @Res() reply: FastifyReply): Promise<void> {
    if (sawFinalEvent(lastEventId)) {
      await reply.status(204).send();
      return;
    }
    const stream = new JobStream(this.notices, id);
    const { scope } = callerOf(reply.request.raw);
    const view = await this.reads.watchFor(id, scope).catch((error: unknown) => {
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
    await stream.pipe(reply.raw, view, (state) => this.reads.get(id, state), (final) => this.reads.asSeenBy(final, scope), this.lifecycle, lastEventId);
  }
}
