import { Body, Controller, Get, HttpCode, Post, Query, Req, Res } from '@nestjs/common';
import { ApiBody, ApiOperation, ApiQuery, ApiResponse, ApiTags } from '../http/openapi.recorder';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { KEPT_CODES } from '@app/queue';
import { adminOf } from '../admin/admin-access';
import { LinksAdminPage } from '../admin/admin-links';
import { ApiProblems } from '../http/openapi.decorators';
import { MAX_LIMIT } from '../jobs/listing-query';
import { MAX_REPLAY, parseDeadLetterQuery, parseReplayRequest } from './dead-letter-query';
import { type DeadLetterListing, DeadLetters, type ReplayAnswer } from './dead-letters';
import { deadLettersPage } from './dead-letters.page';

const CODES = [...KEPT_CODES];
const TIME = { type: 'string', format: 'date-time' } as const;

const LETTER = {
  type: 'object',
  required: ['id', 'type', 'version', 'error', 'attempts', 'createdAt', 'failedAt', 'input', 'callers'],
  properties: {
    id: { type: 'string', description: 'The failed job’s id: `GET /v1/jobs/{id}` shows it to its owners while it is kept.' },
    type: { type: 'string' },
    version: { type: 'integer', description: 'The job type’s version its input was validated against.' },
    error: { type: 'object', required: ['code', 'message'], properties: { code: { type: 'string', enum: CODES }, message: { type: 'string' } } },
    attempts: { type: 'integer', minimum: 0 },
    createdAt: TIME,
    failedAt: TIME,
    input: { description: 'The job’s input, as validated.' },
    callers: { type: 'array', items: { type: 'string' }, description: 'The API keys that owned the job (empty without `API_KEYS`); a replay’s new job is theirs.' },
    tags: { type: 'object', additionalProperties: { type: 'array', items: { type: 'string' } }, description: 'The tags each caller gave it (`Job-Tags`), by key name.' },
    requestId: { type: 'string' },
  },
};

const FILTER_FIELDS = {
  type: { type: 'string', description: 'Only dead letters of this job type.' },
  code: { type: 'string', enum: CODES, description: 'Only those that failed with this code.' },
  since: { ...TIME, description: 'Failed at or after (ISO 8601).' },
  until: { ...TIME, description: 'Failed at or before (ISO 8601).' },
};

/**
 * Dead letters (docs/operate.md#dead-letters) for admin keys (registerAdminAccess guards /admin/*):
 * GET /admin/dead-letters lists them, POST /admin/dead-letters/replay submits them again.
 */
@ApiTags('admin')
@LinksAdminPage({ text: 'Dead letters', url: '/admin/dead-letters' })
@Controller('admin/dead-letters')
export class DeadLettersController {
  constructor(private readonly letters: DeadLetters) {}

  @Get()
  @ApiOperation({
    summary: 'List dead letters (admin keys)',
    description: 'Jobs that failed for good (attempts used up, `JOB_CRASHED` past retries, `JOB_LOST`, `JOB_CHILD_FAILED`, …; not cancelled or expired ones), newest first, kept `DEAD_LETTER_RETENTION_SECONDS` with their input, error and attempts. A page may hold fewer than `limit` items and still have a `next`.',
  })
  @ApiQuery({ name: 'type', required: false, schema: FILTER_FIELDS.type })
  @ApiQuery({ name: 'code', required: false, schema: FILTER_FIELDS.code })
  @ApiQuery({ name: 'since', required: false, schema: FILTER_FIELDS.since })
  @ApiQuery({ name: 'until', required: false, schema: FILTER_FIELDS.until })
  @ApiQuery({ name: 'limit', required: false, schema: { type: 'integer', minimum: 1, maximum: MAX_LIMIT, default: 20 } })
  @ApiQuery({ name: 'cursor', required: false, description: 'The `next` of the previous page.', schema: { type: 'string' } })
  @ApiResponse({
    status: 200,
    description: 'A page; as an HTML table for a browser (`Accept: text/html`), which the queue dashboard links to.',
    content: { 'text/html': { schema: { type: 'string' } }, 'application/json': { schema: { type: 'object', required: ['items', 'next'], properties: { items: { type: 'array', items: LETTER }, next: { type: ['string', 'null'], description: 'Pass as `cursor` for the next page; null on the last.' } } } } },
  })
  @ApiProblems('INVALID_QUERY', 'QUEUE_UNAVAILABLE')
  async list(@Query() query: Record<string, unknown>, @Req() req: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply): Promise<DeadLetterListing | string> {
    const page = await this.letters.list(parseDeadLetterQuery(query));
    // A browser (the queue dashboard's link) gets the page as a table.
    if (!/\btext\/html\b/.test(req.headers.accept ?? '')) return page;
    void reply.type('text/html; charset=utf-8').header('cache-control', 'no-store');
    return deadLettersPage(page, query);
  }

  @Post('replay')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Replay dead letters (admin keys)',
    description: `Submits up to \`limit\` (at most ${MAX_REPLAY}) of the dead letters the filter takes as new jobs, owned by the failed jobs' callers (with their tags), and removes each from the dead letters as it takes it, so a second replay (or one at the same time) runs none of them again. \`GET /v1/jobs/{old id}\` then names the new job (\`replayedAs\`). \`dryRun\`: only names those it would replay. Logged with the admin key that asked; counted by \`nest_offload_dead_letters_replayed_total\`.`,
  })
  @ApiBody({
    required: false,
    schema: { type: 'object', additionalProperties: false, properties: { ...FILTER_FIELDS, limit: { type: 'integer', minimum: 1, maximum: MAX_REPLAY, default: 100 }, dryRun: { type: 'boolean', default: false } } },
  })
  @ApiResponse({
    status: 200,
    description: 'What was replayed.',
    content: {
      'application/json': {
        schema: {
          type: 'object',
          required: ['replayed', 'jobs', 'originals', 'skipped', 'dryRun'],
          properties: {
            replayed: { type: 'integer', minimum: 0 },
            jobs: { type: 'array', items: { type: 'string' }, description: 'The new jobs, in the order of `originals` (an identical job in flight, or a cached result, is joined instead).' },
            originals: { type: 'array', items: { type: 'string' }, description: 'The dead letters replayed; with `dryRun`, those that would be.' },
            skipped: {
              type: 'array',
              description: 'Matched but left as dead letters: their type is gone, their input no longer valid, the backlog full; or their submission failed (e.g. Redis away), after which the rest were not tried (`QUEUE_UNAVAILABLE`).',
              items: { type: 'object', required: ['id', 'code', 'detail'], properties: { id: { type: 'string' }, code: { type: 'string' }, detail: { type: 'string' } } },
            },
            dryRun: { type: 'boolean' },
          },
        },
      },
    },
  })
  @ApiProblems('INVALID_QUERY', 'QUEUE_UNAVAILABLE')
  replay(@Body() body: unknown, @Req() req: FastifyRequest): Promise<ReplayAnswer> {
    return this.letters.replay(parseReplayRequest(body), adminOf(req.raw), req.id);
  }
}
