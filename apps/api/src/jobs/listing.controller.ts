import { Controller, Get, Query, Req } from '@nestjs/common';
import { ApiOperation, ApiQuery, ApiResponse, ApiTags } from '../http/openapi.recorder';
import type { FastifyRequest } from 'fastify';
import { ApiError } from '../http/api-error';
import { ApiProblems } from '../http/openapi.decorators';
import { JOB_VIEW } from '../http/openapi.refs';
import { callerOf, keyScope } from '../security/caller';
import { JobListing, type ListingPage } from './job-listing';
import { MAX_LIMIT, parseListingQuery } from './listing-query';

const PAGE = {
  'application/json': {
    schema: {
      type: 'object',
      required: ['items', 'next'],
      properties: {
        items: { type: 'array', items: JOB_VIEW, description: 'Newest first (by when the caller submitted each).' },
        next: { type: ['string', 'null'], description: 'Pass as `cursor` for the next page; null on the last. A page may hold fewer than `limit` items and still have a `next`.' },
      },
    },
  },
};

/** The filters both listings take, described once. */
function ListingFilters(): MethodDecorator {
  const decorators = [
    ApiQuery({ name: 'type', required: false, description: 'Only jobs of this type.', schema: { type: 'string' } }),
    ApiQuery({ name: 'status', required: false, schema: { type: 'string', enum: ['queued', 'active', 'completed', 'failed', 'cancelled', 'expired'] } }),
    ApiQuery({ name: 'tag', required: false, description: 'Only jobs the caller tagged so (`Job-Tags`).', schema: { type: 'string', maxLength: 64 } }),
    ApiQuery({ name: 'since', required: false, description: 'Submitted at or after (ISO 8601).', schema: { type: 'string', format: 'date-time' } }),
    ApiQuery({ name: 'until', required: false, description: 'Submitted at or before (ISO 8601).', schema: { type: 'string', format: 'date-time' } }),
    ApiQuery({ name: 'limit', required: false, schema: { type: 'integer', minimum: 1, maximum: MAX_LIMIT, default: 20 } }),
    ApiQuery({ name: 'cursor', required: false, description: 'The `next` of the previous page.', schema: { type: 'string' } }),
  ];
  return (target, key, descriptor) => {
    for (const decorate of decorators) decorate(target, key, descriptor);
  };
}

const KEY_NAME = /^[\w.-]{1,64}$/;

/**
 * Listing jobs (docs/api.md#listing-jobs): a caller's own at GET /v1/jobs, any caller's for admin
 * keys at GET /admin/jobs (registerAdminAccess guards /admin/*).
 */
// why one tag for both routes: an operation under two tags is shown twice in the docs page.
@ApiTags('jobs')
@Controller()
export class ListingController {
  constructor(private readonly listing: JobListing) {}

  @Get('v1/jobs')
  @ApiOperation({
    summary: 'List your jobs',
    description: 'The jobs the caller submitted or joined (every type), newest first, while each is readable; filters combine. The cursor stays correct while jobs are added and removed.',
  })
  @ListingFilters()
  @ApiResponse({ status: 200, description: 'A page.', content: PAGE })
  @ApiProblems('INVALID_QUERY', 'LISTING_DISABLED', 'QUEUE_UNAVAILABLE')
  mine(@Query() query: Record<string, unknown>, @Req() req: FastifyRequest): Promise<ListingPage> {
    // why before the query: with the listing off, no query is valid.
    this.listing.checkEnabled();
    return this.listing.list(parseListingQuery(query, callerOf(req.raw).scope));
  }

  @Get('admin/jobs')
  @ApiOperation({ summary: 'List any caller’s jobs (admin keys)', description: 'As `GET /v1/jobs`, for every caller, or for the API key named by `caller`.' })
  @ListingFilters()
  @ApiQuery({ name: 'caller', required: false, description: 'The name of an API key (`API_KEYS`): only its jobs.', schema: { type: 'string', pattern: KEY_NAME.source } })
  @ApiResponse({ status: 200, description: 'A page.', content: PAGE })
  @ApiProblems('INVALID_QUERY', 'LISTING_DISABLED', 'QUEUE_UNAVAILABLE')
  any(@Query() query: Record<string, unknown>): Promise<ListingPage> {
    this.listing.checkEnabled();
    const caller = query.caller;
    if (caller !== undefined && (typeof caller !== 'string' || !KEY_NAME.test(caller))) throw new ApiError('INVALID_QUERY', 'caller: the name of an API key');
    return this.listing.list(parseListingQuery(query, caller === undefined ? undefined : keyScope(caller)));
  }
}
