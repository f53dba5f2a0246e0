import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Optional } from '@nestjs/common';
import type { ParkedJob } from '@app/queue';
import type { RedisClient } from '@app/redis';
import { ApiError } from '../http/api-error';

/** An Idempotency-Key, and whose it is. */
export interface IdempotencyKey {
  scope: string;
  key: string;
}

/** A request's hold on an Idempotency-Key, as the code that enqueues under it sees it. */
export interface Claim {
  /** The job id to enqueue under (a batch derives its items' ids from it). */
  readonly plannedId: string;
  /** True when a request that died may have enqueued under `plannedId` already. */
  readonly takeover: boolean;
  /**
   * Call right before adding jobs. A failure before it releases the key (nothing was enqueued); one
   * after it keeps the key claimed, so that a retry takes it over after the lease and adds under the
   * same ids, joining whatever the failed add may have queued (a timed-out add may have).
   */
  adding(): void;
}

/** Injection token of the Idempotency-Key capability (apps/api/src/idempotency provides it). */
export const SUBMIT_ONCE = Symbol('SUBMIT_ONCE');

/** What submissions ask of the Idempotency-Key capability. */
export interface SubmitOnce {
  /** The request's key for the caller of `scope`; undefined without the header, a 400 problem for a malformed one. */
  keyOf(header: string | string[] | undefined, scope: string): IdempotencyKey | undefined;
  /**
   * Runs `enqueue` once per key and resolves with what the first request with it recorded; `request`
   * is what a retry under the key must repeat (route, inputs, callback).
   */
  once(key: IdempotencyKey, request: readonly string[], enqueue: (claim: Claim) => Promise<string>): Promise<string>;
}

/** Injection token of the webhooks capability (apps/api/src/webhooks provides it). */
export const JOB_CALLBACKS = Symbol('JOB_CALLBACKS');

/** What submissions ask of the webhooks capability. */
export interface JobCallbacks {
  /** The `Callback-Url` header as deliveries will call it, or undefined without one; a 400 problem when refused. */
  accept(header: string | undefined, scope: string): string | undefined;
  /** Registers one callback to `url` for each of `jobIds`, once they are queued (or answered from the cache). */
  register(jobIds: readonly string[], url: string, scope: string, requestId?: string): Promise<void>;
}

/** Injection token of the fair-share capability (apps/api/src/fair-share provides it). */
export const CALLER_SHARES = Symbol('CALLER_SHARES');

/** What submissions ask of the fair-share capability (see libs/queue's fair-share.ts). */
export interface CallerShares {
  /** The caller whose share the jobs of `scope` count in, or undefined: they go to the queue as they are. */
  callerOf(scope: string): string | undefined;
  /** The caller's jobs waiting in `queue`, and how many it may have (CALLER_MAX_QUEUED; 0: no limit). */
  queued(queue: string, caller: string): Promise<{ queued: number; max: number }>;
  /**
   * Parks the caller's new jobs, added delayed by PARK_DELAY_MS; sent on the add's connection, after
   * the add. Resolves with how many of `jobs` the queue had (fewer than added: it ran before the add).
   */
  park(connection: RedisClient, queue: string, caller: string, jobs: readonly ParkedJob[]): Promise<number>;
}

/** Without the capability an Idempotency-Key is ignored, as the IETF draft asks of servers that do not support it. */
const NO_IDEMPOTENCY: SubmitOnce = {
  keyOf: () => undefined,
  once: (_key, _request, enqueue) => enqueue({ plannedId: randomUUID(), takeover: false, adding: () => undefined }),
};

/** Without the capability a Callback-Url is refused: the caller would otherwise wait for a call that never comes. */
const NO_CALLBACKS: JobCallbacks = {
  accept: (header) => {
    if (header === undefined) return undefined;
    throw new ApiError('WEBHOOKS_DISABLED', 'This service sends no webhooks; submit without Callback-Url');
  },
  register: () => Promise.resolve(),
};

/** Without the capability every caller's jobs share the queue's order. */
const NO_SHARES: CallerShares = {
  callerOf: () => undefined,
  queued: () => Promise.resolve({ queued: 0, max: 0 }),
  park: () => Promise.resolve(0),
};

/**
 * The hooks of the optional capabilities around a submission. why the core owns them: a capability
 * is a folder that can be deleted; its module provides the token (globally), and without it the
 * defaults above apply, so no file outside the folder names it.
 */
@Injectable()
export class SubmitHooks {
  constructor(
    @Optional() @Inject(SUBMIT_ONCE) readonly idempotency: SubmitOnce = NO_IDEMPOTENCY,
    @Optional() @Inject(JOB_CALLBACKS) readonly callbacks: JobCallbacks = NO_CALLBACKS,
    @Optional() @Inject(CALLER_SHARES) readonly shares: CallerShares = NO_SHARES,
  ) {}
}
