import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

const digest = (value: string) => createHash('sha256').update(value).digest();

/**
 * The configured API keys, compared in constant time: the presented key and every configured key are
 * hashed to equal-length digests and all of them are compared, so timing reveals neither a key's
 * prefix nor which key matched.
 */
export class ApiKeys {
  private readonly digests: Array<{ name: string; digest: Buffer }>;

  constructor(keys: ReadonlyArray<{ name: string; key: string }>) {
    this.digests = keys.map(({ name, key }) => ({ name, digest: digest(key) }));
  }

  get enabled(): boolean {
    return this.digests.length > 0;
  }

  /** The name of the key the request presents, or undefined when it presents none that is valid. */
  identify(headers: IncomingHttpHeaders): string | undefined {
    const presented = presentedKey(headers);
    if (presented === undefined) return undefined;
    const candidate = digest(presented);
    let match: string | undefined;
    for (const { name, digest: known } of this.digests) {
      if (timingSafeEqual(candidate, known) && match === undefined) match = name;
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
