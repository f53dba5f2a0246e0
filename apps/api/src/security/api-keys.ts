import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

const digest = (value: string) => createHash('sha256').update(value).digest();

/** `client`: a key of API_KEYS (/v1, /docs). `admin`: a key of ADMIN_API_KEYS (/admin/*, /docs). */
export type KeyRole = 'client' | 'admin';

/** Who a valid key belongs to: its name and which list it is in. */
export interface KeyHolder {
  readonly name: string;
  readonly role: KeyRole;
}

export interface RoleKey {
  readonly name: string;
  readonly key: string;
  readonly role: KeyRole;
}

/** The keys of API_KEYS and ADMIN_API_KEYS, with their roles. */
export function roleKeys(config: {
  apiKeys: ReadonlyArray<{ name: string; key: string }>;
  adminApiKeys: ReadonlyArray<{ name: string; key: string }>;
}): RoleKey[] {
  return [...config.apiKeys.map((k) => ({ ...k, role: 'client' as const })), ...config.adminApiKeys.map((k) => ({ ...k, role: 'admin' as const }))];
}

/**
 * Configured keys, compared in constant time: the presented key and every configured key are hashed
 * to equal-length digests and all of them are compared, so timing reveals neither a key's prefix nor
 * which key matched.
 */
export class ApiKeys {
  private readonly digests: Array<{ holder: KeyHolder; digest: Buffer }>;

  constructor(keys: readonly RoleKey[]) {
    this.digests = keys.map(({ name, key, role }) => ({ holder: { name, role }, digest: digest(key) }));
  }

  get enabled(): boolean {
    return this.digests.length > 0;
  }

  /** Whose key `presented` is, or undefined when it is none of them. */
  identify(presented: string | undefined): KeyHolder | undefined {
    if (presented === undefined) return undefined;
    const candidate = digest(presented);
    let match: KeyHolder | undefined;
    for (const { holder, digest: known } of this.digests) {
      if (timingSafeEqual(candidate, known) && match === undefined) match = holder;
    }
    return match;
  }
}

/** The key from `Authorization: Bearer <key>` or `x-api-key: <key>`. */
export function presentedKey(headers: IncomingHttpHeaders): string | undefined {
  const auth = headers.authorization;
  if (auth) {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(auth);
    if (match) return match[1];
  }
  const header = headers['x-api-key'];
  return (Array.isArray(header) ? header[0] : header) || undefined;
}
