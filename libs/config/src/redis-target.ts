/** One Redis host as Sentinel or Cluster names it. */
export interface RedisHost {
  readonly host: string;
  readonly port: number;
}

/** Credentials and TLS, shared by every topology (REDIS_USERNAME, REDIS_PASSWORD, REDIS_TLS, REDIS_TLS_CA_FILE). */
export interface RedisAuth {
  readonly username?: string;
  readonly password?: string;
  readonly tls: boolean;
  /** PEM certificates of a private CA (REDIS_TLS_CA_FILE), trusted in addition to Node's defaults. */
  readonly ca?: string;
}

/**
 * Where one Redis (the queue's or the cache's) is and how to reach it. `variable` is the setting
 * that named it, so a start-up check that finds it wrong can say which one to fix.
 */
export type RedisTarget = RedisAuth & { readonly variable: string } & (
    | { readonly kind: 'standalone'; readonly url: string }
    | { readonly kind: 'sentinel'; readonly sentinels: readonly RedisHost[]; readonly name: string }
    | { readonly kind: 'cluster'; readonly nodes: readonly RedisHost[] }
  );

/** The settings of one Redis, as parsed from the environment (`prefix` is `REDIS_` or `CACHE_REDIS_`). */
export interface TargetSettings {
  prefix: 'REDIS_' | 'CACHE_REDIS_';
  url?: string;
  sentinels?: RedisHost[];
  sentinelName?: string;
  clusterNodes?: RedisHost[];
}

/**
 * The Redis one group of settings names, or the problems that make it ambiguous: at most one of
 * URL, SENTINELS and CLUSTER_NODES, and a SENTINEL_NAME exactly with SENTINELS. Undefined when the
 * group names none (the caller picks the default).
 */
export function resolveTarget(s: TargetSettings, auth: RedisAuth, problems: string[]): RedisTarget | undefined {
  const p = s.prefix;
  const given = [s.url && `${p}URL`, s.sentinels && `${p}SENTINELS`, s.clusterNodes && `${p}CLUSTER_NODES`].filter((v): v is string => !!v);
  if (given.length > 1) {
    problems.push(`${given[0]}: set together with ${given.slice(1).join(' and ')}; set only one of ${p}URL, ${p}SENTINELS or ${p}CLUSTER_NODES`);
    return undefined;
  }
  if (s.sentinels && !s.sentinelName) {
    problems.push(`${p}SENTINEL_NAME: required with ${p}SENTINELS (the name Sentinel monitors the primary under, e.g. "mymaster")`);
    return undefined;
  }
  if (s.sentinelName && !s.sentinels) {
    problems.push(`${p}SENTINEL_NAME: set without ${p}SENTINELS`);
    return undefined;
  }
  if (s.sentinels) return freeze({ kind: 'sentinel', sentinels: s.sentinels, name: s.sentinelName!, variable: `${p}SENTINELS`, ...auth });
  if (s.clusterNodes) return freeze({ kind: 'cluster', nodes: s.clusterNodes, variable: `${p}CLUSTER_NODES`, ...auth });
  if (s.url) return standalone(s.url, `${p}URL`, auth);
  return undefined;
}

/**
 * A redis:// URL. why the shared credentials only when the URL has none: a URL with its own keeps
 * working as before, and a URL without lets the password live in a Secret of its own.
 */
export function standalone(url: string, variable: string, auth: RedisAuth): RedisTarget {
  const parsed = new URL(url);
  const own = parsed.username !== '' || parsed.password !== '';
  return freeze({
    kind: 'standalone',
    url,
    variable,
    tls: auth.tls || parsed.protocol === 'rediss:',
    ...(auth.ca ? { ca: auth.ca } : {}),
    ...(own ? {} : { username: auth.username, password: auth.password }),
  });
}

const frozenHosts = (hosts: readonly RedisHost[]) => Object.freeze(hosts.map((h) => Object.freeze({ ...h })));

function freeze(target: RedisTarget): RedisTarget {
  if (target.kind === 'sentinel') return Object.freeze({ ...target, sentinels: frozenHosts(target.sentinels) });
  if (target.kind === 'cluster') return Object.freeze({ ...target, nodes: frozenHosts(target.nodes) });
  return Object.freeze(target);
}
