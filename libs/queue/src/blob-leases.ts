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
 * - A sweep moves the objects due from `leases` to `deleting` in one script, deletes them, then
 *   forgets them. A lease of an object in `deleting` waits until that ends (or its deadline passes),
 *   so no user counts on an object a sweep is deleting.
 * - Objects with no lease at all (a process that died between its write and its lease) get one
 *   of `orphanGraceMs` when a sweep lists the store; staged writes older than the upload expiry
 *   and unfinished ones are deleted by that listing too.
 */

/** How long a sweep may take to delete what it took: past it, a lease no longer waits for it. */
export const DELETE_WINDOW_MS = 30_000;
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

/** KEYS: leases, deleting. ARGV: now, deadline, how many. Takes up to that many objects whose lease has passed for deletion. */
const TAKE_DUE = new LuaScript(`
local due = redis.call('ZRANGE', KEYS[1], '-inf', ARGV[1], 'BYSCORE', 'LIMIT', 0, tonumber(ARGV[3]))
for _, key in ipairs(due) do
  redis.call('ZREM', KEYS[1], key)
  redis.call('ZADD', KEYS[2], ARGV[2], key)
end
return due
`, 2);

/** KEYS: leases, deleting. ARGV: now, until, object keys. Gives the objects with no lease (and no sweep deleting them) one until `until`; returns how many. */
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

  /** Takes up to `count` objects whose lease has passed, for deletion by `deadline`. */
  takeDue(now: number, deadline: number, count: number): Promise<string[]> {
    return TAKE_DUE.run(this.redis, ...this.keys, now, deadline, count) as Promise<string[]>;
  }

  /** The objects a sweep has deleted (or given up on): leases no longer wait for them. */
  async deletedAll(objects: readonly string[]): Promise<void> {
    if (objects.length > 0) await this.redis.zrem(this.keys[1], ...objects);
  }

  /** Leases `objects` that have none, until `until`; how many had none. */
  adopt(objects: readonly string[], now: number, until: number): Promise<number> {
    return objects.length === 0 ? Promise.resolve(0) : (ADOPT.run(this.redis, ...this.keys, now, until, ...objects) as Promise<number>);
  }

  /** How many objects have a lease, and how many a sweep is deleting (for tests and metrics). */
  async counts(): Promise<{ leased: number; deleting: number }> {
    const [leased, deleting] = await Promise.all([this.redis.zcard(this.keys[0]), this.redis.zcard(this.keys[1])]);
    return { leased, deleting };
  }

  /** Waits until the sweep deleting `key` has done so, or its deadline passed. */
  private async deleted(key: string, deadline: number): Promise<void> {
    while (this.now() < deadline) {
      const still = await this.redis.zscore(this.keys[1], key);
      if (still === null || Number(still) !== deadline) return;
      await sleep(50);
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
}

export interface SweepReport {
  /** Objects deleted because their lease passed. */
  deleted: number;
  /** Objects found without a lease, given one. */
  adopted: number;
  /** Staged and unfinished writes deleted. */
  abandoned: number;
}

const SWEEP_BATCH = 500;
/** Staged writes are named `staging/<epoch ms, base 36>-<uuid>` (see stagingKeyOf). */
const STAGED = /^staging\/([0-9a-z]{1,10})-[0-9a-f-]{36}$/;

/** Deletes the objects whose lease has passed; with `list`, adopts unleased objects and removes abandoned writes. */
export async function sweepBlobs(store: BlobStore, leases: BlobLeases, options: SweepOptions): Promise<SweepReport> {
  const now = options.now ?? Date.now();
  const report: SweepReport = { deleted: 0, adopted: 0, abandoned: 0 };
  for (;;) {
    const started = Date.now();
    const due = await leases.takeDue(now, now + DELETE_WINDOW_MS, SWEEP_BATCH);
    if (due.length === 0) break;
    // why the check: a lease that waited DELETE_WINDOW_MS for this sweep counts on the object again.
    if (Date.now() - started < DELETE_WINDOW_MS / 2) {
      await store.delete(due);
      report.deleted += due.length;
    }
    await leases.deletedAll(due);
    if (due.length < SWEEP_BATCH) break;
  }
  if (!options.list) return report;
  const unleased: string[] = [];
  const abandoned: string[] = [];
  for await (const key of store.list()) {
    if (key.startsWith('sha256/')) unleased.push(key);
    else if (key.startsWith('staging/')) {
      const started = STAGED.exec(key);
      if (!started || parseInt(started[1], 36) < now - options.stagedMaxAgeMs) abandoned.push(key);
    }
    if (unleased.length >= SWEEP_BATCH) report.adopted += await leases.adopt(unleased.splice(0), now, now + options.orphanGraceMs);
  }
  report.adopted += await leases.adopt(unleased, now, now + options.orphanGraceMs);
  await store.delete(abandoned);
  report.abandoned = abandoned.length + (await store.removePartial(new Date(now - options.stagedMaxAgeMs)));
  return report;
}
