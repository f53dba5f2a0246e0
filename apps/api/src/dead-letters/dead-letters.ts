import { Inject, Injectable } from '@nestjs/common';
import type { FileRef } from '@app/blobs';
import { CONFIG, type Config } from '@app/config';
import { JobRegistry } from '@app/jobs';
import { type Logger, LOGGER } from '@app/logging';
import { DEAD_LETTER_PAGE, type DeadLetter, deadLetterKey, deadLetterOf, deadLettersKey, type DeadLetterPage } from '@app/queue';
import type { RedisClient } from '@app/redis';
import { ApiError } from '../http/api-error';
import type { ArchivedJob, JobArchive } from '../jobs/job-archive';
import { prepareJob, type PreparedJob } from '../jobs/job-input';
import { JobOwners } from '../jobs/job-owners';
import { iso, type JobView } from '../jobs/job-view';
import { encodeCursor, type ListCursor } from '../jobs/listing-query';
import { SubmitPipeline } from '../jobs/submit-pipeline';
import { QUEUE_REDIS } from '../queues/queue.providers';
import { ANONYMOUS, keyNameOf } from '../security/caller';
import type { DeadLetterFilter, DeadLetterQuery, ReplayRequest } from './dead-letter-query';
import { DeadLetterMetrics } from './dead-letter.metrics';

/** One dead letter as GET /admin/dead-letters shows it. */
export interface DeadLetterItem {
  id: string;
  type: string;
  version: number;
  error: { code: string; message: string };
  attempts: number;
  createdAt: string;
  failedAt: string;
  input: unknown;
  /** The API keys that owned the job (with API keys). */
  callers: string[];
  tags?: Record<string, string[]>;
  requestId?: string;
}

export interface DeadLetterListing {
  items: DeadLetterItem[];
  next: string | null;
}

/** A dead letter left in place by a replay, and why. */
export interface SkippedReplay {
  id: string;
  code: string;
  detail: string;
}

export interface ReplayAnswer {
  replayed: number;
  /** The new jobs, in the order of `originals`. */
  jobs: string[];
  /** The dead letters replayed (or, with dryRun, that would be). */
  originals: string[];
  /** Those that matched but stay dead letters: their job type is gone, their input no longer valid, the backlog full. */
  skipped: SkippedReplay[];
  dryRun: boolean;
}

/** Entries one queue's walk looks at, at most, per script call (see DEAD_LETTER_PAGE). */
const SCAN_BUDGET = 1000;

const compare = (a: ListCursor, b: ListCursor) => a.score - b.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/**
 * Dead letters (docs/operate.md#dead-letters): jobs that failed for good, kept by the workers for
 * DEAD_LETTER_RETENTION_SECONDS (libs/queue/src/dead-letters.ts), listed and replayed for admin keys,
 * and read as an archive by GET /v1/jobs/{id} once BullMQ has dropped the job (JobArchive).
 */
@Injectable()
export class DeadLetters implements JobArchive {
  private readonly prefix: string;
  private readonly logger: Logger;

  constructor(
    private readonly registry: JobRegistry,
    private readonly pipeline: SubmitPipeline,
    private readonly owners: JobOwners,
    private readonly metrics: DeadLetterMetrics,
    @Inject(QUEUE_REDIS) private readonly redis: RedisClient,
    @Inject(CONFIG) private readonly config: Config,
    @Inject(LOGGER) logger: Logger,
  ) {
    this.prefix = config.redisPrefix;
    this.logger = logger.child({ context: DeadLetters.name });
  }

  /** Job `id` as its dead letter keeps it: a failed view naming its replay, and its owners. */
  async find(id: string): Promise<ArchivedJob | undefined> {
    const queues = this.registry.queues();
    const found = await Promise.all(queues.map((queue) => this.redis.hgetall(deadLetterKey(this.prefix, queue, id))));
    const i = found.findIndex((hash) => hash.type !== undefined);
    const letter = i < 0 ? undefined : deadLetterOf(id, queues[i], found[i]);
    if (!letter) return undefined;
    const view: JobView = {
      id,
      type: letter.type,
      status: 'failed',
      error: { code: letter.code, message: letter.message },
      attempts: letter.attempts,
      createdAt: iso(letter.createdAt)!,
      finishedAt: iso(letter.failedAt),
      ...(letter.replayedAs !== undefined && { replayedAs: letter.replayedAs }),
    };
    return { view, owners: letter.owners };
  }

  /**
   * A page of dead letters, newest first (by when each failed), across the queues: each queue's
   * walk stops after `limit` matches or SCAN_BUDGET entries, and only what every walk has passed is
   * answered, so the cursor (where the page ends) neither repeats nor skips an entry.
   */
  async list(query: DeadLetterQuery): Promise<DeadLetterListing> {
    const queues = this.queuesOf(query);
    const pages = await Promise.all(queues.map((queue) => this.page(queue, query, query.cursor, query.limit, false)));
    const stops = pages.flatMap((page) => (page.stoppedAt ? [page.stoppedAt] : []));
    // The newest position some walk stopped at: below it, another queue may hold entries not yet looked at.
    const boundary = stops.sort(compare).at(-1);
    const entries = pages
      .flatMap((page) => page.letters)
      .map((letter) => ({ letter, at: { score: letter.failedAt, id: letter.id } }))
      .filter(({ at }) => !boundary || compare(at, boundary) >= 0)
      .sort((a, b) => compare(b.at, a.at));
    const taken = entries.slice(0, query.limit);
    const last = taken.length === query.limit ? taken.at(-1)!.at : boundary;
    return { items: taken.map(({ letter }) => itemOf(letter)), next: last ? encodeCursor(last) : null };
  }

  /**
   * Replays up to `limit` dead letters the filter takes as new jobs (dryRun: names them, changes
   * nothing). Each is claimed first, atomically (removed from its queue's index), so a concurrent or
   * later replay never takes it again; it then goes through the submit pipeline as its first owner's
   * submission (its tags too), its other owners are added, and its hash names the new job
   * (`replayedAs`, what GET /v1/jobs/{old id} shows). One that cannot be submitted goes back.
   */
  async replay(request: ReplayRequest, admin: string | undefined, requestId?: string): Promise<ReplayAnswer> {
    const letters: DeadLetter[] = [];
    for (const queue of this.queuesOf(request)) {
      let cursor: ListCursor | undefined;
      while (letters.length < request.limit) {
        const page = await this.page(queue, request, cursor, request.limit - letters.length, !request.dryRun);
        letters.push(...page.letters);
        if (!page.stoppedAt) break;
        cursor = page.stoppedAt;
      }
    }
    const answer: ReplayAnswer = { replayed: 0, jobs: [], originals: [], skipped: [], dryRun: request.dryRun };
    if (request.dryRun) {
      answer.originals = letters.map((letter) => letter.id);
    } else {
      const claimed = groups(letters);
      for (const [i, group] of claimed.entries()) {
        await this.resubmit(group, answer, requestId).catch(async (error: unknown) => {
          // why: the groups after the one that failed are claimed (out of the index) too; left so,
          // they could be neither listed nor replayed again.
          await Promise.all(claimed.slice(i + 1).flat().map((letter) => this.redis.zadd(deadLettersKey(this.prefix, letter.queue), letter.failedAt, letter.id)));
          throw error;
        });
      }
    }
    const { dryRun: _dryRun, limit: _limit, ...filter } = request;
    this.logger.info(
      { audit: 'dead-letters.replay', admin: admin ?? null, filter: { ...filter, since: iso(filter.since), until: iso(filter.until) }, dryRun: request.dryRun, replayed: answer.replayed, skipped: answer.skipped.length, jobs: answer.originals.map((id, i) => [id, answer.jobs[i] ?? null]) },
      request.dryRun ? `dead letters: a dry run of a replay found ${answer.originals.length}` : `dead letters: replayed ${answer.replayed}, by ${admin ?? 'an open API'}`,
    );
    return answer;
  }

  /** Submits `group` (dead letters of one type, first owner and tags) as new jobs; what fails goes back to the index. */
  private async resubmit(group: DeadLetter[], answer: ReplayAnswer, requestId?: string): Promise<void> {
    const [first] = group;
    const def = this.registry.get(first.type);
    const scope = first.owners[0] ?? ANONYMOUS.scope;
    const putBack = (letter: DeadLetter, code: string, detail: string) => {
      answer.skipped.push({ id: letter.id, code, detail });
      return this.redis.zadd(deadLettersKey(this.prefix, letter.queue), letter.failedAt, letter.id);
    };
    if (!def) {
      await Promise.all(group.map((letter) => putBack(letter, 'UNKNOWN_JOB_TYPE', `No job type named "${letter.type}" any more`)));
      return;
    }
    const prepared: Array<{ letter: DeadLetter; job: PreparedJob }> = [];
    for (const letter of group) {
      try {
        const files = letter.files === undefined ? undefined : (JSON.parse(letter.files) as Record<string, FileRef>);
        prepared.push({ letter, job: prepareJob(def, JSON.parse(letter.inputJson), letter.scope ?? scope, files) });
      } catch (error) {
        await putBack(letter, error instanceof ApiError ? error.code : 'INVALID_INPUT', error instanceof Error ? error.message : String(error));
      }
    }
    if (prepared.length === 0) return;
    const tags = first.tags[this.owners.listed(scope)]?.split(',') ?? [];
    const outcomes = await this.pipeline
      .accept(def, prepared.map(({ job }) => job), { scope, submission: { requestId, tags }, wait: false })
      .catch(async (error: unknown) => {
        await Promise.all(prepared.map(({ letter }) => putBack(letter, 'QUEUE_UNAVAILABLE', String(error))));
        throw error;
      });
    const now = Date.now();
    const writes: Array<Promise<unknown>> = [];
    outcomes.forEach((outcome, i) => {
      const { letter } = prepared[i];
      if (outcome.kind === 'rejected') {
        writes.push(putBack(letter, outcome.error.code, outcome.error.message));
        return;
      }
      const id = outcome.kind === 'joined' ? outcome.id : outcome.view.id;
      answer.replayed++;
      answer.originals.push(letter.id);
      answer.jobs.push(id);
      this.metrics.replayed(def.name);
      // Its other owners follow the new job too, with the tags each gave the old one.
      for (const other of letter.owners.slice(1)) writes.push(this.owners.add(def.queue, [id], other, [], letter.tags[other]?.split(',') ?? []));
      writes.push(this.redis.hset(deadLetterKey(this.prefix, letter.queue, letter.id), 'replayedAs', id, 'replayedAt', String(now)));
    });
    await Promise.all(writes);
  }

  /** The queues a filter looks in: its type's, or every one. */
  private queuesOf(filter: DeadLetterFilter): readonly string[] {
    if (filter.type === undefined) return this.registry.queues();
    const def = this.registry.get(filter.type);
    if (!def) throw new ApiError('INVALID_QUERY', `type: no job type named "${filter.type}"`);
    return [def.queue];
  }

  /** One walk of `queue`'s dead letters after `cursor` (see DEAD_LETTER_PAGE); `claim` removes what it returns from the index. */
  private async page(queue: string, filter: DeadLetterFilter, cursor: ListCursor | undefined, count: number, claim: boolean): Promise<DeadLetterPage> {
    const reply = (await DEAD_LETTER_PAGE.run(
      this.redis,
      deadLettersKey(this.prefix, queue),
      cursor ? cursor.score : (filter.until ?? '+inf'),
      cursor ? cursor.id : '',
      filter.since ?? '-inf',
      count,
      filter.type ?? '',
      filter.code ?? '',
      deadLetterKey(this.prefix, queue, ''),
      claim ? '1' : '0',
      SCAN_BUDGET,
      Date.now(),
      this.config.deadLetterRetentionSeconds,
    )) as [string, string, ...Array<[string, string, string[]]>];
    const [stopScore, stopId, ...found] = reply;
    const letters = found.flatMap(([id, , pairs]) => {
      const letter = deadLetterOf(id, queue, pairs);
      return letter ? [letter] : [];
    });
    return { letters, ...(stopScore !== '' && { stoppedAt: { score: Number(stopScore), id: stopId } }) };
  }
}

/** Dead letters grouped for one submission each: the same type, first owner and tags. */
function groups(letters: readonly DeadLetter[]): DeadLetter[][] {
  const byKey = new Map<string, DeadLetter[]>();
  for (const letter of letters) {
    const scope = letter.owners[0] ?? '';
    const key = `${letter.type}\n${scope}\n${letter.tags[scope] ?? letter.tags[ANONYMOUS.scope] ?? ''}`;
    byKey.set(key, [...(byKey.get(key) ?? []), letter]);
  }
  return [...byKey.values()];
}

function itemOf(letter: DeadLetter): DeadLetterItem {
  let input: unknown = letter.inputJson;
  try {
    input = JSON.parse(letter.inputJson);
  } catch {
    // kept as the text it was
  }
  const tags = Object.entries(letter.tags);
  return {
    id: letter.id,
    type: letter.type,
    version: letter.version,
    error: { code: letter.code, message: letter.message },
    attempts: letter.attempts,
    createdAt: iso(letter.createdAt)!,
    failedAt: iso(letter.failedAt)!,
    input,
    callers: letter.owners.flatMap((scope) => keyNameOf(scope) ?? []),
    ...(tags.length > 0 && { tags: Object.fromEntries(tags.map(([scope, text]) => [keyNameOf(scope) ?? scope, text.split(',')])) }),
    ...(letter.requestId !== undefined && { requestId: letter.requestId }),
  };
}
