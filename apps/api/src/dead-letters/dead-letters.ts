import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import type { FileRef } from '@app/blobs';
import { CONFIG, type Config } from '@app/config';
import { JobRegistry } from '@app/jobs';
import { type Logger, LOGGER } from '@app/logging';
import { bullKey, CLAIM_MS, DEAD_LETTER_PAGE, type DeadLetter, deadLetterClaimsKey, deadLetterKey, deadLetterOf, deadLettersKey, type DeadLetterPage, replayJobId, RETURN_LAPSED_CLAIMS, SETTLE_CLAIMS } from '@app/queue';
import type { RedisClient } from '@app/redis';
import { ApiError } from '../http/api-error';
import type { ArchivedJob, JobArchive } from '../jobs/job-archive';
import { prepareJob, type PreparedJob } from '../jobs/job-input';
import { JobOwners } from '../jobs/job-owners';
import { iso, type JobView } from '../jobs/job-view';
import { encodeCursor, type ListCursor } from '../jobs/listing-query';
import { SubmitPipeline } from '../jobs/submit-pipeline';
import { Periodic } from '../periodic';
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
  /**
   * Those that matched but stay dead letters: their job type is gone, their input no longer valid,
   * the backlog full; or their submission failed (Redis away mid-way), and so the rest's was not tried.
   */
  skipped: SkippedReplay[];
  dryRun: boolean;
}

/** Entries one queue's walk looks at, at most, per script call (see DEAD_LETTER_PAGE). */
const SCAN_BUDGET = 1000;
/** How often every replica settles the lapsed claims of replays (see RETURN_LAPSED_CLAIMS), and how many per queue and call. */
const RETURN_EVERY_MS = 5000;
const RETURN_BATCH = 1000;

const compare = (a: ListCursor, b: ListCursor) => a.score - b.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/**
 * Dead letters (docs/operate.md#dead-letters): jobs that failed for good, kept by the workers for
 * DEAD_LETTER_RETENTION_SECONDS (libs/queue/src/dead-letters.ts), listed and replayed for admin keys,
 * and read as an archive by GET /v1/jobs/{id} once BullMQ has dropped the job (JobArchive).
 */
@Injectable()
export class DeadLetters implements JobArchive, OnApplicationBootstrap, OnApplicationShutdown {
  private readonly prefix: string;
  private readonly logger: Logger;
  private readonly returns: Periodic;

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
    this.returns = new Periodic(RETURN_EVERY_MS, () => this.returnLapsed(), (error) => this.logger.warn({ err: error }, 'returning lapsed dead-letter claims failed'));
  }

  onApplicationBootstrap(): void {
    this.returns.start();
  }

  onApplicationShutdown(): Promise<void> {
    return this.returns.stop();
  }

  /**
   * Settles the dead letters whose replay claimed them and did not record a job for them: their claim
   * has lapsed (CLAIM_MS), so no replay is still at work on them. Those whose job (under the id
   * derived from them) exists were submitted and get the record their replay lost; the others (its
   * API replica died before the submission) are dead letters again.
   */
  private async returnLapsed(): Promise<void> {
    if (this.redis.status !== 'ready') return;
    try {
      for (const queue of this.registry.queues()) {
        const [back, recorded] = (await RETURN_LAPSED_CLAIMS.run(
          this.redis,
          deadLettersKey(this.prefix, queue),
          deadLetterClaimsKey(this.prefix, queue),
          Date.now(),
          deadLetterKey(this.prefix, queue, ''),
          RETURN_BATCH,
          bullKey(this.prefix, queue, ''),
        )) as [number, string[]];
        if (back > 0) this.logger.warn({ queue, returned: back }, `dead letters: ${back} claimed by a replay that did not finish are dead letters again`);
        if (recorded.length === 0) continue;
        this.logger.warn({ queue, recorded: recorded.length / 2 }, `dead letters: ${recorded.length / 2} submitted by a replay that did not record it now name their new job`);
        // Their other owners may have missed the new job too (written with the lost record).
        for (let i = 0; i < recorded.length; i += 2) {
          const letter = deadLetterOf(recorded[i], queue, await this.redis.hgetall(deadLetterKey(this.prefix, queue, recorded[i])));
          if (letter) await Promise.all(this.follow(letter, queue, recorded[i + 1]));
        }
      }
    } catch (error) {
      this.logger.warn({ err: error }, 'dead letters: could not return the lapsed claims of replays; retrying');
    }
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
   * nothing). Each is claimed first, atomically (moved from its queue's index to its claims, for
   * CLAIM_MS), so a concurrent or later replay never takes it again; it then goes through the submit
   * pipeline as its first owner's submission (its tags too) under an id derived from it
   * (replayJobId), its other owners are added, and its hash names the new job (`replayedAs`, what
   * GET /v1/jobs/{old id} shows) as its claim goes. One that cannot be submitted goes back. A
   * submission that fails (Redis away) ends the replay: that group and those after it are settled
   * (putBack: back, and answered in `skipped`, unless their job was added after all), and the answer
   * still names what was replayed before. What could not be settled, or was submitted and not
   * recorded (that write failed), is settled by the sweep once its claim lapses.
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
        const failed = await this.resubmit(group, answer, requestId).then(
          () => undefined,
          (error: unknown) => error,
        );
        if (failed === undefined) continue;
        // why stop: the next submission would most likely meet the same Redis. This group's letters
        // not yet answered, and the groups after it (claimed too, untried), go back.
        const answered = new Set([...answer.originals, ...answer.skipped.map(({ id }) => id)]);
        const rest = claimed.slice(i).flat().filter((letter) => !answered.has(letter.id));
        await this.putBack(rest, answer, failed instanceof ApiError ? failed.code : 'QUEUE_UNAVAILABLE', `The replay stopped at a submission that failed: ${String(failed)}`);
        this.logger.warn({ err: failed, replayed: answer.replayed, skipped: answer.skipped.length }, 'dead letters: a replay stopped at a submission that failed; the rest stay dead letters');
        break;
      }
    }
    const { dryRun: _dryRun, limit: _limit, ...filter } = request;
    this.logger.info(
      {
        audit: 'dead-letters.replay',
        admin: admin ?? null,
        filter: { ...filter, since: iso(filter.since), until: iso(filter.until) },
        dryRun: request.dryRun,
        replayed: answer.replayed,
        jobs: answer.originals.map((id, i) => [id, answer.jobs[i] ?? null]),
        skipped: answer.skipped.map(({ id, code }) => [id, code]),
      },
      request.dryRun
        ? `dead letters: a dry run of a replay found ${answer.originals.length}`
        : `dead letters: replayed ${answer.replayed}${answer.skipped.length > 0 ? `, not ${answer.skipped.length}` : ''}, by ${admin ?? 'an open API'}`,
    );
    return answer;
  }

  /**
   * Gives up this replay's claims of `letters` (SETTLE_CLAIMS) and answers each: one whose job exists
   * under its derived id (its submission added the job, then failed) as replayed, its record written
   * now; the others are dead letters again, in `skipped` with `code`. why not thrown on a Redis
   * error: the claims lapse and the sweep settles them alike.
   */
  private async putBack(letters: readonly DeadLetter[], answer: ReplayAnswer, code: string, detail: string): Promise<void> {
    if (letters.length === 0) return;
    const queues = [...new Set(letters.map((letter) => letter.queue))];
    const settled = await Promise.all(
      queues.map(async (queue) => {
        const ids = letters.filter((letter) => letter.queue === queue).map((letter) => letter.id);
        const named = (await SETTLE_CLAIMS.run(this.redis, deadLettersKey(this.prefix, queue), deadLetterClaimsKey(this.prefix, queue), Date.now(), deadLetterKey(this.prefix, queue, ''), bullKey(this.prefix, queue, ''), ...ids)) as string[];
        return ids.map((id, i) => [`${queue}\n${id}`, named[i]] as const);
      }),
    ).then(
      (pairs) => new Map(pairs.flat()),
      (error: unknown) => {
        this.logger.warn({ err: error, ids: letters.map((letter) => letter.id) }, 'dead letters: could not put back what a replay did not submit; its claims lapse');
        return new Map<string, string>();
      },
    );
    const follows: Array<Promise<unknown>> = [];
    for (const letter of letters) {
      const job = settled.get(`${letter.queue}\n${letter.id}`);
      if (!job) {
        answer.skipped.push({ id: letter.id, code, detail });
        continue;
      }
      this.count(letter, job, answer);
      follows.push(...this.follow(letter, letter.queue, job));
    }
    await Promise.all(follows).catch((error: unknown) => this.logger.warn({ err: error }, 'dead letters: could not make the other owners of replayed dead letters owners of their new jobs'));
  }

  /** Answers `letter` as replayed as `job`, and counts it. */
  private count(letter: DeadLetter, job: string, answer: ReplayAnswer): void {
    answer.replayed++;
    answer.originals.push(letter.id);
    answer.jobs.push(job);
    this.metrics.replayed(letter.type);
  }

  /** Makes the other owners of `letter` (its first one submitted its replay) owners of `job` of `queue`, with the tags each gave the old job. */
  private follow(letter: DeadLetter, queue: string, job: string): Array<Promise<void>> {
    return letter.owners.slice(1).map((other) => this.owners.add(queue, [job], other, [], letter.tags[other]?.split(',') ?? []));
  }

  /**
   * Submits `group` (dead letters of one type, first owner and tags) as new jobs; what is refused
   * goes back to the index. Rejects when its submission fails, leaving the rest to `replay`.
   */
  private async resubmit(group: DeadLetter[], answer: ReplayAnswer, requestId?: string): Promise<void> {
    const [first] = group;
    const def = this.registry.get(first.type);
    const scope = first.owners[0] ?? ANONYMOUS.scope;
    const putBack = (letter: DeadLetter, code: string, detail: string) => this.putBack([letter], answer, code, detail);
    if (!def) {
      await Promise.all(group.map((letter) => putBack(letter, 'UNKNOWN_JOB_TYPE', `No job type named "${letter.type}" any more`)));
      return;
    }
    // why renewed: the groups before this one took time; its claims must hold through its submission.
    const until = Date.now() + CLAIM_MS;
    await this.redis.zadd(deadLetterClaimsKey(this.prefix, first.queue), 'XX', ...group.flatMap((letter) => [until, letter.id]));
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
    const outcomes = await this.pipeline.accept(def, prepared.map(({ job }) => job), {
      scope,
      submission: { requestId, tags },
      wait: false,
      // why an id derived from the dead letter: if the record below is lost, a second submission of
      // the same entry finds the job this one added (BullMQ adds an id once) instead of running it again.
      idFor: (i) => replayJobId(prepared[i].letter.id, prepared[i].letter.failedAt),
      takeover: true,
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
      this.count(letter, id, answer);
      writes.push(...this.follow(letter, def.queue, id));
      // why the name before the claim goes: a claim that lapsed meanwhile must not bring it back (RETURN_LAPSED_CLAIMS).
      writes.push(this.redis.hset(deadLetterKey(this.prefix, letter.queue, letter.id), 'replayedAs', id, 'replayedAt', String(now)).then(() => this.redis.zrem(deadLetterClaimsKey(this.prefix, letter.queue), letter.id)));
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

  /** One walk of `queue`'s dead letters after `cursor` (see DEAD_LETTER_PAGE); `claim` moves what it returns to the claims. */
  private async page(queue: string, filter: DeadLetterFilter, cursor: ListCursor | undefined, count: number, claim: boolean): Promise<DeadLetterPage> {
    const reply = (await DEAD_LETTER_PAGE.run(
      this.redis,
      deadLettersKey(this.prefix, queue),
      deadLetterClaimsKey(this.prefix, queue),
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
      Date.now() + CLAIM_MS,
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
