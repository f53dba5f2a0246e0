import { createHash, createHmac, randomBytes } from 'node:crypto';
import type { RedisClient } from '@app/redis';
import type { KeyHolder, KeyRole, RoleKey } from '../security/api-keys';

/** How long a browser stays signed in to the docs and the dashboard. */
export const SESSION_TTL_SECONDS = 8 * 3600;
/** The most sessions one key holds at once: signing in once more signs its oldest out. */
export const SESSIONS_PER_KEY = 20;

export interface SessionCookie {
  readonly name: string;
  /** The Set-Cookie value that stores `token`. */
  set(token: string): string;
  /** The Set-Cookie value that removes it. */
  clear(): string;
}

/**
 * The session cookie. why `__Host-` and Secure in production only: browsers keep a `__Host-` cookie
 * only if it is Secure with Path=/ and no Domain, and refuse Secure cookies from an http:// page
 * (localhost aside), so a development server reached over plain http by another name could never
 * sign in; in production the ingress serves HTTPS.
 */
export function sessionCookie(env: string): SessionCookie {
  const production = env === 'production';
  const name = production ? '__Host-nest_offload_admin' : 'nest_offload_admin';
  const attributes = (maxAge: number) => `Path=/; Max-Age=${maxAge}; HttpOnly; SameSite=Strict${production ? '; Secure' : ''}`;
  return { name, set: (token) => `${name}=${token}; ${attributes(SESSION_TTL_SECONDS)}`, clear: () => `${name}=; ${attributes(0)}` };
}

/** What Redis keeps of a session: never its token, and of its key only a fingerprint. */
interface SessionRecord {
  name: string;
  role: KeyRole;
  /** Fingerprint of the key signed in with: a rotated key ends its sessions. */
  key: string;
  /** Epoch seconds. */
  expires: number;
}

const TOKEN = /^[A-Za-z0-9_-]{43}$/;

/** The Redis name of a token: its SHA-256 (a 256-bit random token needs no slower hash). */
export const tokenDigest = (token: string): string => createHash('sha256').update(token).digest('base64url');

const fingerprint = (key: string) => createHmac('sha256', key).update('nest-offload admin session v2').digest('base64url').slice(0, 16);

/**
 * Browser sessions of the docs and the dashboard, kept in Redis so that every replica sees a sign-out
 * at once: the cookie holds a random 256-bit token; Redis holds, under the token's hash, whose key it
 * was opened with, until it expires (SESSION_TTL_SECONDS).
 */
export class AdminSessions {
  private readonly fingerprints: Map<string, string>;

  constructor(
    private readonly redis: RedisClient,
    private readonly keyOf: (digest: string) => string,
    /** The sorted set of one key's sessions (token digests by expiry): what bounds them. */
    private readonly sessionsOf: (holder: string) => string,
    keys: readonly RoleKey[],
    private readonly now: () => number = Date.now,
  ) {
    this.fingerprints = new Map(keys.map(({ name, key, role }) => [`${role}:${name}`, fingerprint(key)]));
  }

  /**
   * Opens a session for `holder`; resolves with the token for its cookie. why a bound per key: a
   * key could otherwise sign in without end, each session a record in the queue Redis for 8 hours
   * (which must not evict); past SESSIONS_PER_KEY its oldest sessions end. One key per command, so
   * it works on a Redis Cluster; two sign-ins at once may leave one more for a moment.
   */
  async open(holder: KeyHolder): Promise<string> {
    const token = randomBytes(32).toString('base64url');
    const digest = tokenDigest(token);
    const now = this.now();
    const record: SessionRecord = {
      name: holder.name,
      role: holder.role,
      key: this.fingerprints.get(`${holder.role}:${holder.name}`)!,
      expires: Math.floor(now / 1000) + SESSION_TTL_SECONDS,
    };
    const index = this.sessionsOf(`${holder.role}:${holder.name}`);
    // Scored by when each ends, to the millisecond: the lowest are the oldest.
    const [, , , oldest] = await Promise.all([
      this.redis.set(this.keyOf(digest), JSON.stringify(record), 'EX', SESSION_TTL_SECONDS),
      this.redis.zadd(index, now + SESSION_TTL_SECONDS * 1000, digest),
      this.redis.zremrangebyscore(index, '-inf', now),
      this.redis.zrange(index, 0, -(SESSIONS_PER_KEY + 1)),
      this.redis.expire(index, SESSION_TTL_SECONDS),
    ]);
    if (oldest.length > 0) await Promise.all([this.redis.zrem(index, ...oldest), ...oldest.map((old) => this.redis.del(this.keyOf(old)))]);
    return token;
  }

  /** Whose session `token` is; undefined when it is malformed, unknown, signed out, expired, or its key is gone or rotated. */
  async find(token: string | undefined): Promise<KeyHolder | undefined> {
    if (token === undefined || !TOKEN.test(token)) return undefined;
    const stored = await this.redis.get(this.keyOf(tokenDigest(token)));
    return stored === null ? undefined : this.holderOf(stored);
  }

  /** Ends the session of `token`, on every replica. */
  async close(token: string | undefined): Promise<void> {
    if (token === undefined || !TOKEN.test(token)) return;
    const digest = tokenDigest(token);
    const stored = await this.redis.get(this.keyOf(digest));
    const holder = stored === null ? undefined : this.holderOf(stored);
    await Promise.all([this.redis.del(this.keyOf(digest)), ...(holder ? [this.redis.zrem(this.sessionsOf(`${holder.role}:${holder.name}`), digest)] : [])]);
  }

  /** The holder a stored record names, if it is still valid under the configured keys. */
  holderOf(stored: string): KeyHolder | undefined {
    let record: Partial<SessionRecord>;
    try {
      record = JSON.parse(stored) as Partial<SessionRecord>;
    } catch {
      return undefined;
    }
    const { name, role, key, expires } = record;
    if (typeof name !== 'string' || (role !== 'client' && role !== 'admin') || typeof expires !== 'number') return undefined;
    if (expires * 1000 <= this.now() || this.fingerprints.get(`${role}:${name}`) !== key) return undefined;
    return { name, role };
  }
}

/** One cookie's value from a Cookie header. */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const pair of header?.split(';') ?? []) {
    const eq = pair.indexOf('=');
    if (eq > 0 && pair.slice(0, eq).trim() === name) return pair.slice(eq + 1).trim();
  }
  return undefined;
}
