import type { IncomingMessage } from 'node:http';
import type { RateGrant } from './rate-limiter';

/** Who sent a request, as far as the rest of the API needs to know. */
export interface Caller {
  /**
   * The namespace of the caller's own state (Idempotency-Keys): its API key's name, or one shared
   * namespace when the API runs without keys (it cannot tell callers apart then).
   */
  readonly scope: string;
  /**
   * Takes up to `wanted` more requests from the caller's rate budget (a batch counts its items);
   * resolves with how many fit. All of them when rate limits are off.
   */
  charge(wanted: number): Promise<RateGrant>;
}

const CALLER = Symbol('nest-offload.caller');
type WithCaller = IncomingMessage & { [CALLER]?: Caller };

const unlimited = (wanted: number): Promise<RateGrant> => Promise.resolve({ granted: wanted, retryAfterSeconds: 0 });

/** The caller of a request to an open API (no keys, no rate limits: the access middleware is off). */
export const ANONYMOUS: Caller = { scope: 'anonymous', charge: unlimited };

/** Records who sent `req` (the access middleware does, once it has checked the key). */
export function attachCaller(req: IncomingMessage, caller: Caller): void {
  (req as WithCaller)[CALLER] = caller;
}

export function callerOf(req: IncomingMessage): Caller {
  return (req as WithCaller)[CALLER] ?? ANONYMOUS;
}

/** The scope of a caller known by its API key's name. */
export const keyScope = (keyName: string | undefined): string => (keyName === undefined ? ANONYMOUS.scope : `key:${keyName}`);

/** The API key's name a scope stands for; undefined for the anonymous scope (no API keys). */
export const keyNameOf = (scope: string): string | undefined => (scope.startsWith('key:') ? scope.slice('key:'.length) : undefined);
