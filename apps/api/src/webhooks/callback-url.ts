import type { WebhookConfig } from '@app/config';

/** Longest Callback-Url accepted. */
const MAX_LENGTH = 2048;
const DEFAULT_PORT: Record<string, number> = { 'http:': 80, 'https:': 443 };

export type CallbackUrlCheck = { ok: true; url: string } | { ok: false; reason: string };

/**
 * Which callback URLs webhooks may call: parsed with WHATWG URL (so the host is compared in the form
 * a request would use: lowercase, IDNA punycode, IPv4 in dotted decimal), http or https (https only
 * in production), no user info, and host and port exactly as an entry of WEBHOOK_ALLOWED_HOSTS lists
 * them (an entry without a port allows the scheme's default port only). Checked when a submission
 * names the URL and again before every delivery attempt. Pure: no DNS here (see address-guard.ts).
 */
export class CallbackUrlPolicy {
  constructor(private readonly config: Pick<WebhookConfig, 'allowedHosts' | 'schemes'>) {}

  /**
   * The URL as deliveries will call it (fragment dropped), or why it is refused. `keyName` is the
   * caller's API key: entries scoped to another key (`name=host`) do not allow it.
   */
  check(raw: string, keyName?: string): CallbackUrlCheck {
    if (raw.length > MAX_LENGTH) return { ok: false, reason: `it is longer than ${MAX_LENGTH} characters` };
    if (!URL.canParse(raw)) return { ok: false, reason: 'it is not an absolute URL' };
    const url = new URL(raw);
    if (!(this.config.schemes as readonly string[]).includes(url.protocol)) {
      return { ok: false, reason: `its scheme must be ${this.config.schemes.map((s) => s.slice(0, -1)).join(' or ')}` };
    }
    if (url.username || url.password) return { ok: false, reason: 'it must not carry a user name or password' };
    const port = url.port ? Number(url.port) : DEFAULT_PORT[url.protocol];
    const allowed = this.config.allowedHosts.some(
      (entry) => entry.host === url.hostname && (entry.port ?? DEFAULT_PORT[url.protocol]) === port && (entry.key === undefined || entry.key === keyName),
    );
    if (!allowed) return { ok: false, reason: `${url.host || url.hostname} is not in WEBHOOK_ALLOWED_HOSTS${keyName === undefined ? '' : ` for key "${keyName}"`}` };
    url.hash = '';
    return { ok: true, url: url.href };
  }
}
