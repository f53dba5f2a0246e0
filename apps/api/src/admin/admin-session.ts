import { createHmac, timingSafeEqual } from 'node:crypto';

export const SESSION_COOKIE = 'nest_offload_admin';
/** How long a browser stays signed in to the docs and the dashboard. */
export const SESSION_TTL_SECONDS = 8 * 3600;

const b64url = (value: string | Buffer) => Buffer.from(value).toString('base64url');

/**
 * Browser sessions for the docs and the dashboard: a cookie `name.expiry.mac`, where mac is an HMAC
 * keyed by the named API key. why no store and no secret of its own: every replica that has the
 * keys verifies it, and rotating a key ends its sessions.
 */
export class AdminSessions {
  private readonly secrets: Map<string, Buffer>;

  constructor(
    keys: ReadonlyArray<{ name: string; key: string }>,
    private readonly now: () => number = Date.now,
  ) {
    this.secrets = new Map(keys.map(({ name, key }) => [name, createHmac('sha256', key).update('nest-offload admin session v1').digest()]));
  }

  /** A cookie value for the key `name`, valid for SESSION_TTL_SECONDS. */
  issue(name: string): string {
    const expires = Math.floor(this.now() / 1000) + SESSION_TTL_SECONDS;
    const payload = `${b64url(name)}.${expires}`;
    return `${payload}.${this.mac(name, payload)}`;
  }

  /** The key name a cookie value was issued for, or undefined when it is forged, expired or its key is gone. */
  verify(value: string | undefined): string | undefined {
    const parts = value?.split('.');
    if (parts?.length !== 3) return undefined;
    const [encodedName, expires, mac] = parts;
    const name = Buffer.from(encodedName, 'base64url').toString();
    if (!this.secrets.has(name) || !/^\d{1,12}$/.test(expires) || Number(expires) * 1000 <= this.now()) return undefined;
    const expected = Buffer.from(this.mac(name, `${encodedName}.${expires}`));
    const presented = Buffer.from(mac);
    return presented.length === expected.length && timingSafeEqual(presented, expected) ? name : undefined;
  }

  private mac(name: string, payload: string): string {
    return createHmac('sha256', this.secrets.get(name)!).update(payload).digest('base64url');
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
