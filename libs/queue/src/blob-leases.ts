import { setTimeout as sleep } from 'node:timers/promises';
import type { BlobStore } from '@app/blobs';
import { LuaScript, type RedisClient } from '@app/redis';
import { blobLeaseKey } from './queue.keys';

/**
 * The lifecycle of the blob store's content-addressed objects (`sha256/…`, see blobKeyOf), which
 * several jobs and cache entries may share: each object has a lease, the latest time anything may
 * still need it (epoch ms), raised by every user and never lowered (ZADD GT). When it has passed, a
 * sweep (sweepBlobs, every API replica) takes the object and deletes it.
 *
 * - The API leases a job's input files before their staged copies take their content address (an
 *   object found there already is then kept by the lease), until the job may still be queued, run
 *   and be read (inputLeaseUntil).
 * - A worker leases the files a run returned once the run is over (its pool thread has no Redis),
 *   until its job and cache entry expire; an object that had no lease then may have been swept
 *   since the thread found it in the store, so the worker checks it is there (holdWritten), and an
 *   attempt whose result file is gone fails and is retried.
 * - A sweep moves the objects due from `leases` to `deleting` in one script, a chunk at a time, each
 *   chunk with a deadline (DELETE_WINDOW_MS on), deletes them, then forgets them. A lease of an
 *   object in `deleting` waits until that ends (or its deadline passes), so no user counts on an
 *   object a sweep is deleting. A sweep's delete is aborted half-way to the deadline, so none lands
 *   after it (see sweepBlobs); what a sweep took and did not delete is due again, and what a sweep
 *   that died left in `deleting` is due again once its deadline has passed.
 * - Objects with no lease at all (a process that died between its write and its lease) get one
 *   of `orphanGraceMs` when a sweep lists the store; staged writes older than the upload expiry
 *   and unfinished ones are deleted by that listing too.
 */

/**
 * How long a lease waits at most for a sweep deleting its object: the deadline of each chunk a sweep
 * takes. why 10 s: a sweep that died mid-chunk holds the leases of its objects (a submission's
 * answer among them) until then; a live one holds them only while its delete runs.
 */
export const DELETE_WINDOW_MS = 10_000;
/**
 * How long a job may wait queued and still find its input files, counted from its submission. why
 * a bound: the lease is per object, not per job; a job still queued past it fails (its input gone).
 */
export const QUEUED_INPUT_MS = 24 * 3600 * 1000;

/**
 * KEYS: leases, deleting. ARGV: now, until, object keys. Raises each object's lease to `until`.
 * Returns per object: 0 when it had a lease (it is there, or being written by whoever leased it),
 * 1 when it had none, or the deadline of the sweep deleting it.
 */
const LEASE = new LuaScript(`
local now, untilMs = tonumber(ARGV[1]), ARGV[2]
local out = {}
for i = 3, #ARGV do
  local key = ARGV[i]
  local had = redis.call('ZSCORE', KEYS[1], key)
  redis.call('ZADD', KEYS[1], 'GT', untilMs, key)
  if had then
    out[#out + 1] = 0
  else
    local deadline = tonumber(redis.call('ZSCORE', KEYS[2], key))
    if deadline and deadline > now then out[#out + 1] = deadline else out[#out + 1] = 1 end
  end
end
return out
`, 2);

/**
 * KEYS: leases, deleting. ARGV: now (the clock), due by, deadline, how many. Takes up to that many
 * objects whose lease has passed by `due by` for deletion by `deadline`. First, what sweeps left in
 * `deleting` past their deadline (a sweep that died: no sweep deletes after its deadline) is due
 * again, unless a lease has taken it since.
 */
const TAKE_DUE = new LuaScript(`
local count = tonumber(ARGV[4])
local stale = redis.call('ZRANGE', KEYS[2], '-inf', ARGV[1], 'BYSCORE', 'LIMIT', 0, count)
for _, key in ipairs(stale) do
  redis.call('ZREM', KEYS[2], key)
  redis.call('ZADD', KEYS[1], 'NX', ARGV[2], key)
end
local due = redis.call('ZRANGE', KEYS[1], '-inf', ARGV[2], 'BYSCORE', 'LIMIT', 0, count)
for _, key in ipairs(due) do
  redis.call('ZREM', KEYS[1], key)
  redis.call('ZADD', KEYS[2], ARGV[3], key)
end
return due
`, 2);

/**
 * KEYS: leases, deleting. ARGV: deadline, deleted (1 or 0), due at, object keys. Ends a sweep's hold
 * on the objects it took with `deadline`, those still its own (one past its deadline may have lost
 * them to another sweep): forgotten when deleted, else due again at `due at` unless leased since.
 */
const SETTLE = new LuaScript(`
local deadline = tonumber(ARGV[1])
for i = 4, #ARGV do
  local key = ARGV[i]
  if tonumber(redis.call('ZSCORE', KEYS[2], key)) == deadline then
    redis.call('ZREM', KEYS[2], key)
    if ARGV[2] == '0' then redis.call('ZADD', KEYS[1], 'NX', ARGV[3], key) end
  end
end
return 0
`, 2);

/** KEYS: leases, deleting. ARGV: now (the clock), until, object keys. Gives the objects with no lease (and no sweep deleting them) one until `until`; returns how many. */
const ADOPT = new LuaScript(`
local n = 0
for i = 3, #ARGV do
  local key = ARGV[i]
  local deadline = tonumber(redis.call('ZSCORE', KEYS[2], key))
  if not redis.call('ZSCORE', KEYS[1], key) and not (deadline and deadline > tonumber(ARGV[1])) then
    redis.call('ZREM', KEYS[2], key)
    redis.call('ZADD', KEYS[1], ARGV[2], key)
    n = n + 1
  end
end
return n
`, 2);

/** Objects a sweep took for deletion (BlobLeases.takeDue): it deletes them by `deadline`, or not at all. */
export interface TakenObjects {
  readonly keys: string[];
  /** Epoch ms: a lease waits for the deletion until then at most. */
  readonly deadline: number;
  /** The time by which their leases had passed: they are due again at it if not deleted. */
  readonly dueBy: number;
}

/** The leases of one service's objects (REDIS_PREFIX `prefix`), on the queue Redis. */
export class BlobLeases {
  private readonly keys: [string, string];

  constructor(
    private readonly redis: RedisClient,
    prefix: string,
    private readonly now: () => number = Date.now,
  ) {
    this.keys = [blobLeaseKey(prefix, 'leases'), blobLeaseKey(prefix, 'deleting')];
  }

  /**
   * Leases `objects` until `until`, waiting out any sweep deleting one of them: once it resolves,
   * no sweep deletes them before `until`. Returns those that had no lease (possibly deleted since
   * whoever last looked found them).
   */
  async hold(objects: readonly string[], until: number): Promise<string[]> {
    if (objects.length === 0) return [];
    const answers = (await LEASE.run(this.redis, ...this.keys, this.now(), Math.ceil(until), ...objects)) as number[];
    const unleased: string[] = [];
    for (const [i, answer] of answers.entries()) {
      if (answer === 0) continue;
      unleased.push(objects[i]);
      if (answer > 1) await this.deleted(objects[i], answer);
    }
    return unleased;
  }

  /**
   * Leases objects written before their lease (a pool thread's writes, which may have found an
   * object in the store just before a sweep deleted it): returns those no longer there.
   */
  async holdWritten(store: BlobStore, objects: readonly string[], until: number): Promise<string[]> {
    const unleased = await this.hold(objects, until);
    const lost: string[] = [];
    for (const key of unleased) if (!(await store.stat(key))) lost.push(key);
    return lost;
  }

  /**
   * Takes up to `count` objects whose lease has passed by `dueBy` for deletion within `windowMs` from
   * now (the clock, whatever `dueBy` a test passes): leases of them wait until settle() or then.
   */
  async takeDue(dueBy: number, count: number, windowMs = DELETE_WINDOW_MS): Promise<TakenObjects> {
    const now = this.now();
    const deadline = now + windowMs;
    const keys = (await TAKE_DUE.run(this.redis, ...this.keys, now, dueBy, deadline, count)) as string[];
    return { keys, deadline, dueBy };
  }

  /** Ends a sweep's hold on what it took: forgotten when `deleted`, else due again (its delete failed or was aborted). */
  async settle(taken: TakenObjects, deleted: boolean): Promise<void> {
    if (taken.keys.length > 0) await SETTLE.run(this.redis, ...this.keys, taken.deadline, deleted ? 1 : 0, taken.dueBy, ...taken.keys);
  }

  /** Leases `objects` that have none (and no sweep is deleting), until `until`; how many had none. */
  adopt(objects: readonly string[], until: number): Promise<number> {
    return objects.length === 0 ? Promise.resolve(0) : (ADOPT.run(this.redis, ...this.keys, this.now(), until, ...objects) as Promise<number>);
  }

  /** How many objects have a lease, and how many a sweep is deleting (for tests and metrics). */
  async counts(): Promise<{ leased: number; deleting: number }> {
    const [leased, deleting] = await Promise.all([this.redis.zcard(this.keys[0]), this.redis.zcard(this.keys[1])]);
    return { leased, deleting };
  }

  /**
   * Waits until the sweep deleting `key` has done so, or its deadline passed. why a growing pause: a
   * live sweep's delete takes milliseconds, a dead one's deadline is seconds away.
   */
  private async deleted(key: string, deadline: number): Promise<void> {
    for (let pause = 10; this.now() < deadline; pause = Math.min(pause * 2, 250)) {
      const still = await this.redis.zscore(this.keys[1], key);
      if (still === null || Number(still) !== deadline) return;
      await sleep(Math.max(1, Math.min(pause, deadline - this.now())));
    }
  }
}

/**
 * Until when a job's input files must stay: as long as the job may wait queued (its type's start
 * deadline, or QUEUED_INPUT_MS), run every attempt, and stay readable (JOB_RETENTION_SECONDS).
 */
export function inputLeaseUntil(now: number, def: { timeoutMs: number; startWithinMs?: number; retry: { attempts: number; backoffMs: number } }, retentionSeconds: number): number {
  const queued = def.startWithinMs ?? QUEUED_INPUT_MS;
  const attempts = def.retry.attempts * def.timeoutMs + def.retry.backoffMs * 2 ** def.retry.attempts;
  return now + queued + attempts + retentionSeconds * 1000;
}

export interface SweepOptions {
  /** Now, epoch ms (a test passes a later time to see what expiry removes). */
  now?: number;
  /** List the whole store for objects without a lease and old staged writes: costs a listing (S3: a request per 1000 objects). */
  list?: boolean;
  /** How old a staged or unfinished write may be before it counts as abandoned: the upload expiry. */
  stagedMaxAgeMs: number;
  /** The lease an object found without one gets: longer than a run takes between writing a file and leasing it. */
  orphanGraceMs: number;
  /**
   * Stops the sweep (the app shutting down): before its next chunk or listed object, and a delete in
   * flight; what it took and did not delete is due again. The sweep resolves with what it did.
   */
  signal?: AbortSignal;
  /** The deadline of each chunk it takes (DELETE_WINDOW_MS; a test shortens it). */
  deleteWindowMs?: number;
}

export interface SweepReport {
  /** Objects deleted because their lease passed. */
  deleted: number;
  /** Objects found without a lease, given one. */
  adopted: number;
  /** Staged and unfinished writes deleted. */
  abandoned: number;
}

/** Objects a sweep takes and deletes at once: one S3 DeleteObjects request. */
const SWEEP_BATCH = 500;
/** Staged writes are named `staging/<epoch ms, base 36>-<uuid>` (see stagingKeyOf). */
const STAGED = /^staging\/([0-9a-z]{1,10})-[0-9a-f-]{36}$/;

/** Deletes the objects whose lease has passed; with `list`, adopts unleased objects and removes abandoned writes. */
export async function sweepBlobs(store: BlobStore, leases: BlobLeases, options: SweepOptions): Promise<SweepReport> {
  const now = options.now ?? Date.now();
  const windowMs = options.deleteWindowMs ?? DELETE_WINDOW_MS;
  const { signal } = options;
  const report: SweepReport = { deleted: 0, adopted: 0, abandoned: 0 };
  while (!signal?.aborted) {
    const taken = await leases.takeDue(now, SWEEP_BATCH, windowMs);
    if (taken.keys.length === 0) break;
    let deleted = false;
    try {
      // why aborted half-way to the deadline: a lease that waited for this sweep counts on the object
      // again at the deadline, and a delete still running then could remove an object just leased;
      // the other half is the store's to finish a request it had before the abort.
      const bound = AbortSignal.timeout(Math.max(0, taken.deadline - windowMs / 2 - Date.now()));
      await store.delete(taken.keys, { signal: signal ? AbortSignal.any([bound, signal]) : bound });
      deleted = true;
      report.deleted += taken.keys.length;
    } catch (error) {
      if (!signal?.aborted) throw error;
    } finally {
      await leases.settle(taken, deleted);
    }
    if (taken.keys.length < SWEEP_BATCH) break;
  }
  if (!options.list || signal?.aborted) return report;
  const unleased: string[] = [];
  const abandoned: string[] = [];
  for await (const key of store.list()) {
    if (signal?.aborted) break;
    if (key.startsWith('sha256/')) unleased.push(key);
    else if (key.startsWith('staging/')) {
      const started = STAGED.exec(key);
      if (!started || parseInt(started[1], 36) < now - options.stagedMaxAgeMs) abandoned.push(key);
    }
    if (unleased.length >= SWEEP_BATCH) report.adopted += await leases.adopt(unleased.splice(0), now + options.orphanGraceMs);
  }
  report.adopted += await leases.adopt(unleased, now + options.orphanGraceMs);
  if (signal?.aborted) return report;
  await store.delete(abandoned);
  report.abandoned = abandoned.length + (await store.removePartial(new Date(now - options.stagedMaxAgeMs)));
  return report;
}
