import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { CONFIG, type Config } from '@app/config';
import { JobRegistry } from '@app/jobs';
import { type Logger, LOGGER } from '@app/logging';
import { jobTagsKey, listingEndsKey, listingKey, PAGE, SWEEP_ENDED, sweepArgs } from '@app/queue';
import { RedisConnections, type RedisClient } from '@app/redis';
import { ApiError } from '../http/api-error';
import { Periodic } from '../periodic';
import { JobQueues, QUEUE_REDIS } from '../queues/queue.providers';
import { ANONYMOUS } from '../security/caller';
import { JobOwners } from './job-owners';
import { JobStore } from './job-store';
import type { JobStatus, JobView } from './job-view';
import { type ListCursor, encodeCursor } from './listing-query';

/** What a listing asks for (see parseListingQuery). */
export interface ListingQuery {
  /** The caller whose jobs to list; undefined: every caller's (GET /admin/jobs without `caller=`). */
  scope?: string;
  type?: string;
  status?: JobStatus;
  tag?: string;
  /** Epoch ms, inclusive. */
  since?: number;
  until?: number;
  limit: number;
  cursor?: ListCursor;
}

export interface ListingPage {
  items: JobView[];
  next: string | null;
}

/** Index entries looked at per request, as a multiple of `limit`: past it, a filtered page ends early with a `next`. */
const SCAN_ROUNDS = 5;
/** How often every replica sweeps the ends due (see job-index.ts); and how many per pass and queue. */
const SWEEP_MS = 1000;
const SWEEP_BATCH = 500;

interface Entry {
  id: string;
  score: number;
  queue: string;
}

/**
 * GET /v1/jobs and GET /admin/jobs: a caller's jobs (or everyone's), newest first, from the listing
 * index (libs/queue/src/job-index.ts), never from a scan of job keys. A page merges each queue's
 * index after the cursor, reads the views of its entries and keeps those the filters take (type and
 * tag narrow the index read; status, and tag for every caller, are checked on the view). Every
 * replica also sweeps the ended jobs out of the indexes, once a second. With JOB_LISTING=off a
 * listing is a 404 LISTING_DISABLED; the sweep goes on, so what was written before the switch drains.
 */
@Injectable()
export class JobListing implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly sweeps: Periodic;
  private failing = false;
  private readonly logger: Logger;
  /** why a connection of its own: its sweeps, once a second however idle, stay off the request path's. */
  private readonly sweeper: RedisClient;

  constructor(
    private readonly queues: JobQueues,
    private readonly store: JobStore,
    private readonly owners: JobOwners,
    private readonly registry: JobRegistry,
    @Inject(QUEUE_REDIS) private readonly redis: RedisClient,
    @Inject(CONFIG) private readonly config: Config,
    @Inject(LOGGER) logger: Logger,
    connections: RedisConnections,
  ) {
    this.logger = logger.child({ context: JobListing.name });
    this.sweeper = connections.open('listing', config.queueRedis, 'request', 'nest-offload:api-listing');
    this.sweeps = new Periodic(SWEEP_MS, () => this.sweep(), (error) => this.logger.warn({ err: error }, 'listing index sweep failed'));
  }

  onApplicationBootstrap(): void {
    this.sweeps.start();
  }

  onApplicationShutdown(): Promise<void> {
    return this.sweeps.stop();
  }

  /** Throws the problem a listing answers with JOB_LISTING=off. */
  checkEnabled(): void {
    if (!this.owners.listing) throw new ApiError('LISTING_DISABLED', 'This service keeps no job listing (JOB_LISTING=off); find a job by the id its submission answered');
  }

  async list(query: ListingQuery): Promise<ListingPage> {
    this.checkEnabled();
    const def = query.type === undefined ? undefined : this.registry.get(query.type);
    if (query.type !== undefined && !def) throw new ApiError('INVALID_QUERY', `type: no job type named "${query.type}"; GET /v1/job-types lists them`);
    const queues = def ? [def.queue] : this.registry.queues();
    // why the tag on the view for every caller's jobs: tags are each caller's, indexed per caller.
    const tagIndexed = query.scope !== undefined ? query.tag : undefined;
    const keyOf = (queue: string) => listingKey(this.config.redisPrefix, queue, query.scope === undefined ? (this.owners.enabled ? undefined : ANONYMOUS.scope) : this.owners.listed(query.scope), tagIndexed);
    const items: JobView[] = [];
    let cursor = query.cursor;
    for (let round = 0; round < SCAN_ROUNDS; round++) {
      const want = query.limit - items.length;
      const { taken, more } = await this.entries(queues, keyOf, query, cursor, want);
      const views = await Promise.all(taken.map((entry) => this.viewOf(entry, query.scope)));
      for (const view of views) if (view && this.takes(view, query)) items.push(view);
      if (taken.length > 0) cursor = { score: taken.at(-1)!.score, id: taken.at(-1)!.id };
      if (!more) return { items, next: null };
      if (items.length >= query.limit) break;
    }
    return { items, next: encodeCursor(cursor!) };
  }

  /** The next `want` entries after `cursor` across `queues`' indexes, newest first, and whether more follow. */
  private async entries(queues: readonly string[], keyOf: (queue: string) => string, query: ListingQuery, cursor: ListCursor | undefined, want: number): Promise<{ taken: Entry[]; more: boolean }> {
    const top = cursor && (query.until === undefined || cursor.score <= query.until) ? cursor : undefined;
    const max = top ? top.score : (query.until ?? '+inf');
    const pages = await Promise.all(
      queues.map(async (queue) => {
        const flat = (await PAGE.run(this.redis, keyOf(queue), max, top?.id ?? '', query.since ?? '-inf', want + 1)) as string[];
        const entries: Entry[] = [];
        for (let i = 0; i < flat.length; i += 2) entries.push({ id: flat[i], score: Number(flat[i + 1]), queue });
        return entries;
      }),
    );
    const merged = pages.flat().sort((a, b) => b.score - a.score || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
    return { taken: merged.slice(0, want), more: merged.length > want };
  }

  /** The view of a listed job with the tags of `scope` (every caller's, for undefined), or undefined: it is gone. */
  private async viewOf(entry: Entry, scope: string | undefined): Promise<JobView | undefined> {
    const tagsKey = jobTagsKey(this.config.redisPrefix, entry.queue, entry.id);
    const [view, tags] = await Promise.all([
      this.store.view(entry.id, undefined, this.queues.get(entry.queue)),
      scope === undefined
        ? this.redis.hvals(tagsKey).then((all) => [...new Set(all.flatMap((text) => text.split(',')))])
        : this.redis.hget(tagsKey, this.owners.listed(scope)).then((text) => (text ? text.split(',') : [])),
    ]);
    if (!view) return undefined;
    return tags.length > 0 ? { ...view, tags } : view;
  }

  private takes(view: JobView, query: ListingQuery): boolean {
    if (query.type !== undefined && view.type !== query.type) return false;
    if (query.status !== undefined && view.status !== query.status) return false;
    return query.tag === undefined || (view.tags?.includes(query.tag) ?? false);
  }

  /** Forgets the jobs whose end is due in every index (see SWEEP_ENDED), each queue until none is left due. */
  private async sweep(): Promise<void> {
    if (this.redis.status !== 'ready') return;
    try {
      for (const queue of this.registry.queues()) {
        const args = sweepArgs(this.config.redisPrefix, queue, this.owners.enabled, ANONYMOUS.scope);
        while (((await SWEEP_ENDED.run(this.sweeper, listingEndsKey(this.config.redisPrefix, queue), Date.now(), SWEEP_BATCH, ...args)) as number) === SWEEP_BATCH);
      }
      if (this.failing) this.logger.info('the listing index is swept again');
      this.failing = false;
    } catch (error) {
      if (!this.failing) this.logger.warn({ err: error }, 'could not sweep ended jobs out of the listing index; retrying');
      this.failing = true;
    }
  }
}
