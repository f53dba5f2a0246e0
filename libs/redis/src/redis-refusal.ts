import type { RedisTarget } from '@app/config';

/**
 * The errors that say the configuration is wrong, not that Redis is away: retrying will not help
 * until someone changes a setting (or the server's). Anything else (ECONNREFUSED, a timeout, a
 * reset) is an outage.
 */
type Kind = 'credentials' | 'no-credentials' | 'permissions' | 'untrusted' | 'hostname' | 'validity';

// why codes and texts: a socket error has a code; ioredis' Sentinel errors carry only the text
// ("All sentinels are unreachable. … Last error: WRONGPASS …").
const RULES: ReadonlyArray<{ kind: Kind; codes?: readonly string[]; text: RegExp }> = [
  { kind: 'credentials', text: /\bWRONGPASS\b.*|invalid username-password pair.*/ },
  { kind: 'no-credentials', text: /\bNOAUTH\b.*/ },
  { kind: 'permissions', text: /\bNOPERM\b.*/ },
  {
    kind: 'untrusted',
    codes: [
      'SELF_SIGNED_CERT_IN_CHAIN',
      'DEPTH_ZERO_SELF_SIGNED_CERT',
      'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
      'UNABLE_TO_GET_ISSUER_CERT',
      'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
      'CERT_SIGNATURE_FAILURE',
      'CERT_UNTRUSTED',
      'CERT_REJECTED',
      'INVALID_CA',
    ],
    text: /self[- ]signed certificate.*|unable to (verify the first certificate|get (local )?issuer certificate).*|certificate signature failure.*/,
  },
  { kind: 'hostname', codes: ['ERR_TLS_CERT_ALTNAME_INVALID'], text: /Hostname\/IP does not match certificate's altnames.*/ },
  { kind: 'validity', codes: ['CERT_HAS_EXPIRED', 'CERT_NOT_YET_VALID'], text: /certificate (has expired|is not yet valid).*/ },
];

/** Where `target` is, for a message: a URL's host and port (never its credentials), or the Sentinel set or cluster. */
export function describeTarget(target: RedisTarget): string {
  if (target.kind === 'sentinel') return `the Sentinels of "${target.name}" or its primary`;
  if (target.kind === 'cluster') return 'a cluster node';
  const url = new URL(target.url);
  return `${url.hostname}:${url.port || 6379}`;
}

/** The user a URL with credentials of its own names ('' for the default user); undefined when it has none. */
function urlUser(target: RedisTarget): string | undefined {
  if (target.kind !== 'standalone') return undefined;
  const url = new URL(target.url);
  return url.username !== '' || url.password !== '' ? decodeURIComponent(url.username) : undefined;
}

/**
 * The problem `error` reveals with `target`'s configuration, as `VARIABLE: what happened at where:
 * the error`, or undefined when the error is an outage (or unknown). `where` is the node the error
 * came from when known (start-up checks), else describeTarget.
 */
export function redisProblem(error: unknown, target: RedisTarget, where = describeTarget(target)): string | undefined {
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: unknown } | undefined)?.code;
  for (const rule of RULES) {
    const found = rule.text.exec(message);
    if (!found && !(typeof code === 'string' && rule.codes?.includes(code))) continue;
    const text = (found?.[0] ?? message).split('\n')[0];
    const quoted = typeof code === 'string' && !text.includes(code) ? `${text} (${code})` : text;
    return explain(rule.kind, quoted, target, where);
  }
  return undefined;
}

function explain(kind: Kind, quoted: string, target: RedisTarget, where: string): string {
  const fromUrl = urlUser(target);
  const inUrl = fromUrl !== undefined;
  const user = `user "${(inUrl ? fromUrl : target.username) || 'default'}"`;
  const from = `${where} (from ${target.variable})`;
  switch (kind) {
    case 'credentials':
      return inUrl
        ? `${target.variable}: ${where} refused the credentials in the URL (${user}): ${quoted}`
        : `REDIS_PASSWORD: ${from} refused the credentials REDIS_USERNAME/REDIS_PASSWORD give (${user}): ${quoted}`;
    case 'no-credentials':
      return inUrl || target.password !== undefined
        ? explain('credentials', quoted, target, where)
        : `REDIS_PASSWORD: ${from} requires credentials and none are set (REDIS_USERNAME/REDIS_PASSWORD, or user:password in a URL): ${quoted}`;
    case 'permissions':
      return `${inUrl ? target.variable : 'REDIS_USERNAME'}: ${inUrl ? where : from} denies ${user} a command, key or channel the apps use (docker/redis/ has the rules each app needs): ${quoted}`;
    case 'untrusted':
      return target.ca
        ? `REDIS_TLS_CA_FILE: the certificate of ${from} is signed by no CA in REDIS_TLS_CA_FILE or Node's defaults: ${quoted}`
        : `REDIS_TLS_CA_FILE: the certificate of ${from} is not trusted; set REDIS_TLS_CA_FILE to the PEM file of the CA that signed it: ${quoted}`;
    case 'hostname':
      return `${target.variable}: the certificate of ${where} is not issued for that host name; connect to a name it lists: ${quoted}`;
    case 'validity':
      return `${target.variable}: the certificate of ${where} is outside its validity period; the server needs a current one: ${quoted}`;
  }
}
