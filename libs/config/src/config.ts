import { z } from 'zod';
import { type Cidr, parseCidr } from './cidr';
import { cpuBudget } from './cpu-budget';
import { weakKeys } from './key-strength';
import { type RedisAuth, type RedisTarget, resolveTarget, standalone } from './redis-target';
import { readCaFile } from './tls-ca';

/**
 * Every setting the two apps read, parsed once at start-up from the environment.
 * A bad value stops the process with a message naming the variable (see `loadConfig`).
 */
const SIZE_UNITS: Record<string, number> = { b: 1, kb: 1024, mb: 1024 ** 2, gb: 1024 ** 3 };

const int = (min: number, max: number) =>
  z
    .string()
    .trim()
    .regex(/^\d+$/, 'must be a whole number')
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));

const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'], { error: 'must be true or false' })
  .transform((v) => v === 'true' || v === '1' || v === 'yes');

const size = z
  .string()
  .trim()
  .toLowerCase()
  .regex(/^\d+(\.\d+)?\s*(b|kb|mb|gb)?$/, 'must be a size like 5mb, 512kb or 1048576')
  .transform((v) => {
    const [, num, unit = 'b'] = /^([\d.]+)\s*([a-z]*)$/.exec(v)!;
    return Math.floor(Number(num) * SIZE_UNITS[unit]);
  })
  .pipe(z.number().int().min(1024, 'must be at least 1kb').max(1024 ** 3, 'must be at most 1gb'));

const redisUrl = z
  .string()
  .trim()
  .refine((v) => URL.canParse(v) && /^rediss?:$/.test(new URL(v).protocol), 'must be a redis:// or rediss:// URL');

// Sentinels or cluster seeds: comma-separated `host:port` (an IPv6 host in brackets: `[::1]:26379`).
const hostList = z
  .string()
  .transform((v) => v.split(',').map((entry) => entry.trim()).filter(Boolean))
  .pipe(
    z
      .array(z.string().regex(/^(\[[0-9a-fA-F:.]+\]|[\w.-]+):\d{1,5}$/, 'must be comma-separated host:port pairs'))
      .min(1, 'must name at least one host:port'),
  )
  .transform((entries) =>
    entries.map((entry) => {
      const colon = entry.lastIndexOf(':');
      return { host: entry.slice(0, colon).replace(/^\[(.*)\]$/, '$1'), port: Number(entry.slice(colon + 1)) };
    }),
  )
  .refine((hosts) => hosts.every((h) => h.port >= 1 && h.port <= 65535), 'ports must be 1-65535');

// Sentinel's name for the monitored primary (`sentinel monitor <name> …`).
const sentinelName = z.string().trim().regex(/^[\x21-\x7e]{1,128}$/, 'must be 1-128 printable characters without spaces');

// API keys: comma-separated, each `name=key` or a bare key; keys are 16+ printable characters (and
// at least 128 bits of estimated entropy: see key-strength.ts, checked in loadConfig).
const apiKeys = z
  .string()
  .transform((v) => v.split(',').map((entry) => entry.trim()).filter(Boolean))
  .pipe(
    z.array(
      z
        .string()
        .regex(/^([\w.-]{1,64}=)?[\x21-\x2b\x2d-\x7e]{16,256}$/, 'each key must be 16-256 printable characters, optionally named as name=key'),
    ),
  )
  .transform((entries) =>
    entries.map((entry, i) => {
      // why not split at any `=`: a bare base64 key ends in `=` padding (`openssl rand -base64 32`).
      const named = /^([\w.-]{1,64})=(.{16,})$/.exec(entry);
      return named ? { name: named[1], key: named[2] } : { name: `key-${i + 1}`, key: entry };
    }),
  );

// Address ranges: comma-separated CIDRs (`10.0.0.0/8`, `fd00::/8`) or single addresses, IPv4 or IPv6.
const cidrList = z
  .string()
  .transform((v) => v.split(',').map((entry) => entry.trim()).filter(Boolean))
  .pipe(
    z
      .array(
        z.string().transform((entry, ctx): Cidr | typeof z.NEVER => {
          const cidr = parseCidr(entry);
          if (!cidr) ctx.addIssue({ code: 'custom', message: `"${entry}" is not an IPv4 or IPv6 address or CIDR range (e.g. 10.0.0.0/8, fd00::/8)` });
          return cidr ?? z.NEVER;
        }),
      )
      .min(1, 'must name at least one address range'),
  );

// OTLP/HTTP base URL, as the OpenTelemetry specification defines OTEL_EXPORTER_OTLP_ENDPOINT.
const otlpEndpoint = z
  .string()
  .trim()
  .refine((v) => URL.canParse(v) && /^https?:$/.test(new URL(v).protocol), 'must be an http:// or https:// URL (the OTLP/HTTP receiver, e.g. http://otel-collector:4318)');

// `key=value,key=value`, values URL-encoded (the OpenTelemetry specification's format).
const otlpHeaders = z
  .string()
  .transform((v) => v.split(',').map((pair) => pair.trim()).filter(Boolean))
  .pipe(z.array(z.string().regex(/^[\w.-]+\s*=.+/, 'must be comma-separated key=value pairs')))
  .transform((pairs) => Object.fromEntries(pairs.map((pair) => [pair.slice(0, pair.indexOf('=')).trim(), decodeOr(pair.slice(pair.indexOf('=') + 1).trim())])));

function decodeOr(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

// Queue names as job types declare them (see QUEUE_NAME in libs/jobs); which exist is checked at start.
const queueList = z
  .string()
  .transform((v) => [...new Set(v.split(',').map((name) => name.trim()).filter(Boolean))])
  .pipe(z.array(z.string().regex(/^[a-z][a-z0-9-]{0,30}$/, 'must be comma-separated queue names')).min(1, 'must name at least one queue'));

// Standard Webhooks signing secret: `whsec_` and the base64 of 24-64 random bytes.
const webhookSecret = z
  .string()
  .trim()
  .regex(/^whsec_[A-Za-z0-9+/]+={0,2}$/, 'must be whsec_ followed by base64 (e.g. whsec_$(openssl rand -base64 32))')
  .refine((v) => {
    const bytes = Buffer.from(v.slice('whsec_'.length), 'base64').length;
    return bytes >= 24 && bytes <= 64;
  }, 'must encode 24 to 64 random bytes');

/**
 * One WEBHOOK_ALLOWED_HOSTS entry, `host` or `host:port` (`[v6]:port`), normalized the way WHATWG URL
 * normalizes a callback URL's host (lowercase, IDNA to punycode, IPv4 forms to dotted decimal), so
 * the two compare exactly. Without a port it allows the scheme's default port only. `name=host…`
 * allows it to the API key of that name only.
 */
function hostEntry(entry: string, ctx: z.RefinementCtx): WebhookHost | typeof z.NEVER {
  const scoped = /^([\w.-]{1,64})=(.*)$/.exec(entry);
  const hostPart = scoped ? scoped[2] : entry;
  const match = /^(\[[0-9a-fA-F:.]+\]|[^\s:/?#@[\]\\*=]+)(?::(\d{1,5}))?$/.exec(hostPart);
  const host = match && URL.canParse(`http://${match[1]}`) ? new URL(`http://${match[1]}`).hostname : undefined;
  const port = match?.[2] === undefined ? undefined : Number(match[2]);
  if (!host || (port !== undefined && (port < 1 || port > 65535))) {
    ctx.addIssue({ code: 'custom', message: `"${entry}" is not a host, host:port or keyname=host:port (no scheme, path or wildcard)` });
    return z.NEVER;
  }
  return { host, ...(port === undefined ? {} : { port }), ...(scoped ? { key: scoped[1] } : {}) };
}

const webhookHostList = z
  .string()
  .transform((v) => [...new Set(v.split(',').map((entry) => entry.trim()).filter(Boolean))])
  .pipe(z.array(z.string().transform(hostEntry)).min(1, 'must name at least one host'));

const schema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  REDIS_URL: redisUrl.optional(),
  REDIS_SENTINELS: hostList.optional(),
  REDIS_SENTINEL_NAME: sentinelName.optional(),
  REDIS_CLUSTER_NODES: hostList.optional(),
  REDIS_USERNAME: z.string().regex(/^[\x21-\x7e]{1,256}$/, 'must be 1-256 printable characters without spaces').optional(),
  REDIS_PASSWORD: z.string().max(4096, 'must be at most 4096 characters').optional(),
  REDIS_TLS: bool.default(false),
  REDIS_TLS_CA_FILE: z.string().trim().min(1).optional(),
  REDIS_MIN_REPLICAS_ACK: int(0, 16).default(0),
  CACHE_REDIS_URL: redisUrl.optional(),
  CACHE_REDIS_SENTINELS: hostList.optional(),
  CACHE_REDIS_SENTINEL_NAME: sentinelName.optional(),
  CACHE_REDIS_CLUSTER_NODES: hostList.optional(),
  CACHE_MEMORY_MB: int(0, 4096).default(16),
  REDIS_PREFIX: z
    .string()
    .regex(/^[\w.-]{1,64}$/, 'must be 1-64 letters, digits, dots, dashes or underscores')
    .default('nest-offload'),
  HOST: z.string().min(1).default('0.0.0.0'),
  PORT: int(0, 65535).default(3000),
  WORKER_PORT: int(0, 65535).default(3001),
  WORKER_THREADS: int(1, 256).default(cpuBudget()),
  WORKER_QUEUES: queueList.optional(),
  WORKER_MAX_MEMORY_MB: int(16, 65536).default(512),
  WORKER_NICE: int(0, 19).default(19),
  WORKER_SCHED: z.enum(['idle', 'other'], { error: 'must be idle or other' }).default('other'),
  JOB_TIMEOUT_MS: int(100, 24 * 3600 * 1000).default(60_000),
  JOB_RETENTION_SECONDS: int(1, 30 * 24 * 3600).default(3600),
  JOB_LOCK_MS: int(1000, 600_000).default(30_000),
  SHUTDOWN_TIMEOUT_MS: int(0, 3600 * 1000).default(25_000),
  MAX_BACKLOG: int(1, 100_000_000).default(10_000),
  MAX_WAIT_SECONDS: int(0, 300).default(30),
  IDEMPOTENCY_TTL_SECONDS: int(1, 30 * 24 * 3600).default(86_400),
  BATCH_MAX_ITEMS: int(1, 100_000).default(1000),
  REQUEST_TIMEOUT_MS: int(1000, 600_000).default(30_000),
  BODY_LIMIT: size.default(5 * 1024 ** 2),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  CHAOS_JOBS: bool.default(false),
  DEMO: bool.default(false),
  API_KEYS: apiKeys.optional(),
  ADMIN_API_KEYS: apiKeys.optional(),
  ALLOW_UNAUTHENTICATED: bool.default(false),
  RATE_LIMIT_PER_MINUTE: int(0, 10_000_000).default(0),
  RATE_LIMIT_BURST: int(1, 10_000_000).optional(),
  TRUSTED_PROXIES: cidrList.optional(),
  TRUST_PROXY_HOPS: z.string().trim().optional(),
  REDIS_EVICTION_CHECK: z.enum(['warn', 'refuse', 'off']).default('warn'),
  API_DOCS: bool.optional(),
  QUEUE_DASHBOARD: bool.default(false),
  QUEUE_DASHBOARD_READONLY: bool.default(true),
  WEBHOOK_SECRET: webhookSecret.optional(),
  WEBHOOK_ALLOWED_HOSTS: webhookHostList.optional(),
  WEBHOOK_ALLOW_PRIVATE_ADDRESSES: bool.default(false),
  WEBHOOK_MAX_ATTEMPTS: int(1, 100).default(12),
  WEBHOOK_BACKOFF_MS: int(10, 3_600_000).default(5000),
  WEBHOOK_TIMEOUT_MS: int(100, 120_000).default(15_000),
  OTEL_EXPORTER_OTLP_ENDPOINT: otlpEndpoint.optional(),
  OTEL_EXPORTER_OTLP_HEADERS: otlpHeaders.optional(),
  OTEL_SERVICE_NAME: z.string().trim().min(1).max(255).optional(),
  OTEL_TRACES_SAMPLER: z.enum(['parentbased_always_on', 'parentbased_traceidratio']).default('parentbased_always_on'),
  OTEL_TRACES_SAMPLER_ARG: z
    .string()
    .trim()
    .regex(/^(0(\.\d+)?|1(\.0+)?)$/, 'must be a ratio from 0 to 1')
    .transform(Number)
    .optional(),
});

/** A host webhooks may call (see WEBHOOK_ALLOWED_HOSTS); without a port, the scheme's default port. */
export interface WebhookHost {
  readonly host: string;
  readonly port?: number;
  /** The API key (by name) whose callbacks may go there; undefined: every key's. */
  readonly key?: string;
}

/** Webhook settings; present only when WEBHOOK_SECRET and WEBHOOK_ALLOWED_HOSTS are both set. */
export interface WebhookConfig {
  /** Standard Webhooks signing secret (`whsec_…`). */
  readonly secret: string;
  readonly allowedHosts: readonly WebhookHost[];
  /** URL schemes callbacks may use: https only in production. */
  readonly schemes: readonly ('http:' | 'https:')[];
  /** Lets an allowed name resolve to a private, loopback or link-local address (internal receivers). */
  readonly allowPrivateAddresses: boolean;
  readonly maxAttempts: number;
  /** First retry delay; each next one doubles. */
  readonly backoffMs: number;
  readonly timeoutMs: number;
}

export interface Config {
  readonly env: 'development' | 'production' | 'test';
  /** Queue Redis (BullMQ): a URL, a Sentinel set or a Cluster. Must not evict keys. */
  readonly queueRedis: RedisTarget;
  /** Result-cache Redis; the queue Redis unless set, may be a separate one with an LRU policy. */
  readonly cacheRedis: RedisTarget;
  /** Replicas that must acknowledge a job's write (Redis WAIT) before the API answers 202; 0 is off. */
  readonly redisMinReplicasAck: number;
  /** In-process memory for recently read cache entries (per replica); 0 turns it off. */
  readonly cacheMemoryMb: number;
  /** Prefix of every Redis key this service writes (BullMQ's prefix too). */
  readonly redisPrefix: string;
  readonly host: string;
  readonly port: number;
  readonly workerPort: number;
  readonly workerThreads: number;
  /** Queues this worker consumes; undefined means every queue a registered type uses. */
  readonly workerQueues?: readonly string[];
  /** Heap limit of each pool thread; a job past it fails with JOB_OUT_OF_MEMORY. */
  readonly workerMaxMemoryMb: number;
  /** Added to the pool threads' nice value so they yield the CPU to event loops. */
  readonly workerNice: number;
  /**
   * Linux scheduling policy of the pool threads: `idle` (SCHED_IDLE) runs them only when no other
   * thread wants the CPU; `other` is the default time sharing, where only WORKER_NICE weighs them.
   */
  readonly workerSched: 'idle' | 'other';
  /** Upper bound on every job type's own timeout. */
  readonly jobTimeoutMs: number;
  /** How long finished jobs stay readable by id. */
  readonly jobRetentionSeconds: number;
  /** BullMQ lock of a running job, renewed at half this; a job whose lock lapses is "stalled" and re-run. */
  readonly jobLockMs: number;
  readonly shutdownTimeoutMs: number;
  readonly maxBacklog: number;
  readonly maxWaitSeconds: number;
  /** How long an Idempotency-Key is remembered: a retry within it gets the same job(s). */
  readonly idempotencyTtlSeconds: number;
  /** Most items one POST /v1/jobs/{type}/batch may carry. */
  readonly batchMaxItems: number;
  /** Time a client has to send a whole request, headers and body; slower clients are cut off. */
  readonly requestTimeoutMs: number;
  readonly bodyLimit: number;
  readonly logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** Registers the `chaos` job type (crash, hang, leak on demand) for tests and drills. */
  readonly chaosJobs: boolean;
  /** Serves the /demo page (live event-loop chart). Never in production. */
  readonly demo: boolean;
  /** Client keys, accepted on /v1 (Authorization: Bearer or x-api-key) and /docs; empty means no authentication. */
  readonly apiKeys: ReadonlyArray<{ readonly name: string; readonly key: string }>;
  /** Admin keys, the only ones accepted on /admin/* (the queue dashboard) once any key is set; never on /v1. */
  readonly adminApiKeys: ReadonlyArray<{ readonly name: string; readonly key: string }>;
  /** Requests per minute per API key (per client IP without keys), shared by all replicas; 0 is off. */
  readonly rateLimitPerMinute: number;
  /** Requests a client may make at once before the per-minute rate applies. */
  readonly rateLimitBurst: number;
  /** Proxies whose X-Forwarded-For is read (only when one of them is the direct peer); empty: never read. */
  readonly trustedProxies: readonly Cidr[];
  /** What to do when the queue Redis may evict keys (evicted keys are lost jobs). */
  readonly redisEvictionCheck: 'warn' | 'refuse' | 'off';
  /** Serves the OpenAPI document (/docs-json) and its interactive page (/docs); behind the API keys when set. */
  readonly apiDocs: boolean;
  /** Serves the Bull Board queue dashboard at /admin/queues, to admin keys only when any key is set. */
  readonly queueDashboard: boolean;
  /** The dashboard only shows; retry, remove, pause, clean and add are refused. */
  readonly queueDashboardReadOnly: boolean;
  /** Signed callbacks on completion (Callback-Url); undefined means off. */
  readonly webhooks?: WebhookConfig;
  /** Tracing: on when the OTLP/HTTP endpoint is set (spans go to `<endpoint>/v1/traces`). */
  readonly otel: {
    readonly endpoint?: string;
    /** Sent with every export (e.g. a vendor's API key). */
    readonly headers: Readonly<Record<string, string>>;
    /** service.name; undefined means nest-offload-api or nest-offload-worker. */
    readonly serviceName?: string;
    /** Share of requests (root spans) traced; a trace's other spans follow its root's decision. */
    readonly sampleRatio: number;
  };
}

/** Variables whose values may hold credentials: never echoed in error messages. */
const SECRET = new Set(['REDIS_URL', 'CACHE_REDIS_URL', 'REDIS_PASSWORD', 'API_KEYS', 'ADMIN_API_KEYS', 'OTEL_EXPORTER_OTLP_HEADERS', 'WEBHOOK_SECRET']);

const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/**
 * Parses the environment into a frozen Config, or throws a ConfigError naming each bad variable.
 * `app` adds the checks only one app needs (the API refuses to run open in production).
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, app?: 'api' | 'worker'): Config {
  // why: an empty variable (FOO=) means "unset" in most deploy tooling, not "the empty string".
  const present = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = schema.safeParse(present);
  if (!parsed.success) {
    throw new ConfigError(
      parsed.error.issues.map((i) => {
        const name = String(i.path[0] ?? '(env)');
        const got = SECRET.has(name) ? 'value hidden' : `got ${JSON.stringify(present[name])}`;
        return `${name}: ${i.message} (${got})`;
      }),
    );
  }
  const e = parsed.data;
  const redisProblems: string[] = [];
  const ca = e.REDIS_TLS_CA_FILE === undefined ? undefined : readCaFile(e.REDIS_TLS_CA_FILE);
  if (ca && 'problem' in ca) redisProblems.push(ca.problem);
  const auth: RedisAuth = {
    username: e.REDIS_USERNAME,
    password: e.REDIS_PASSWORD,
    tls: e.REDIS_TLS,
    ...(ca && 'pem' in ca ? { ca: ca.pem } : {}),
  };
  const queueRedis =
    resolveTarget(
      { prefix: 'REDIS_', url: e.REDIS_URL, sentinels: e.REDIS_SENTINELS, sentinelName: e.REDIS_SENTINEL_NAME, clusterNodes: e.REDIS_CLUSTER_NODES },
      auth,
      redisProblems,
    ) ?? standalone(DEFAULT_REDIS_URL, 'REDIS_URL', auth);
  const cacheRedis =
    resolveTarget(
      {
        prefix: 'CACHE_REDIS_',
        url: e.CACHE_REDIS_URL,
        sentinels: e.CACHE_REDIS_SENTINELS,
        sentinelName: e.CACHE_REDIS_SENTINEL_NAME,
        clusterNodes: e.CACHE_REDIS_CLUSTER_NODES,
      },
      auth,
      redisProblems,
    ) ?? queueRedis;
  const refused = [
    ...redisProblems,
    ca && 'pem' in ca && !queueRedis.tls && !cacheRedis.tls && 'REDIS_TLS_CA_FILE: set, but no Redis is reached over TLS (set REDIS_TLS=true or use rediss:// URLs)',
    e.CHAOS_JOBS && e.NODE_ENV === 'production' && 'CHAOS_JOBS: must not be enabled when NODE_ENV=production',
    e.DEMO && e.NODE_ENV === 'production' && 'DEMO: must not be enabled when NODE_ENV=production',
    app === 'api' &&
      e.NODE_ENV === 'production' &&
      !e.API_KEYS?.length &&
      !e.ALLOW_UNAUTHENTICATED &&
      'API_KEYS: required when NODE_ENV=production (set ALLOW_UNAUTHENTICATED=true if a gateway in front authenticates)',
    // why: in production the docs and the dashboard are served only behind the API keys.
    app === 'api' &&
      e.NODE_ENV === 'production' &&
      e.API_DOCS &&
      !e.API_KEYS?.length &&
      'API_DOCS: needs API_KEYS when NODE_ENV=production (the docs are served behind the keys)',
    app === 'api' &&
      e.NODE_ENV === 'production' &&
      e.QUEUE_DASHBOARD &&
      !e.ADMIN_API_KEYS?.length &&
      'QUEUE_DASHBOARD: needs ADMIN_API_KEYS when NODE_ENV=production (the dashboard is served to admin keys only)',
    new Set(e.API_KEYS?.map((k) => k.name)).size !== (e.API_KEYS?.length ?? 0) && 'API_KEYS: key names must be unique',
    new Set(e.ADMIN_API_KEYS?.map((k) => k.name)).size !== (e.ADMIN_API_KEYS?.length ?? 0) && 'ADMIN_API_KEYS: key names must be unique',
    ...weakKeys('API_KEYS', e.API_KEYS),
    ...weakKeys('ADMIN_API_KEYS', e.ADMIN_API_KEYS),
    ...(e.ADMIN_API_KEYS ?? [])
      .filter((admin) => e.API_KEYS?.some((client) => client.key === admin.key))
      .map((admin) => `ADMIN_API_KEYS: the key named "${admin.name}" is also one of API_KEYS; an admin key must be a key of its own`),
    // why refuse rather than ignore: it trusted X-Forwarded-For from whatever peer sent it; ignored, a
    // proxy's clients would silently share its address, and so its rate limit and failed-sign-in budget.
    e.TRUST_PROXY_HOPS !== undefined &&
      e.TRUST_PROXY_HOPS !== '0' &&
      'TRUST_PROXY_HOPS: no longer read; list the addresses of your proxies in TRUSTED_PROXIES instead (CIDRs, e.g. 10.0.0.0/8), and remove it',
    ...(e.WEBHOOK_ALLOWED_HOSTS ?? [])
      .filter((h) => h.key !== undefined && !e.API_KEYS?.some((k) => k.name === h.key))
      .map((h) => `WEBHOOK_ALLOWED_HOSTS: "${h.key}=${h.host}" names no key of API_KEYS`),
    (e.WEBHOOK_SECRET === undefined) !== (e.WEBHOOK_ALLOWED_HOSTS === undefined) &&
      'WEBHOOK_SECRET and WEBHOOK_ALLOWED_HOSTS: set both to turn webhooks on, or neither',
  ].filter((p): p is string => typeof p === 'string');
  if (refused.length > 0) throw new ConfigError(refused);
  return Object.freeze({
    env: e.NODE_ENV,
    queueRedis,
    cacheRedis,
    redisMinReplicasAck: e.REDIS_MIN_REPLICAS_ACK,
    cacheMemoryMb: e.CACHE_MEMORY_MB,
    redisPrefix: e.REDIS_PREFIX,
    host: e.HOST,
    port: e.PORT,
    workerPort: e.WORKER_PORT,
    workerThreads: e.WORKER_THREADS,
    workerQueues: e.WORKER_QUEUES && Object.freeze(e.WORKER_QUEUES),
    workerMaxMemoryMb: e.WORKER_MAX_MEMORY_MB,
    workerNice: e.WORKER_NICE,
    workerSched: e.WORKER_SCHED,
    jobTimeoutMs: e.JOB_TIMEOUT_MS,
    jobRetentionSeconds: e.JOB_RETENTION_SECONDS,
    jobLockMs: e.JOB_LOCK_MS,
    shutdownTimeoutMs: e.SHUTDOWN_TIMEOUT_MS,
    maxBacklog: e.MAX_BACKLOG,
    maxWaitSeconds: e.MAX_WAIT_SECONDS,
    idempotencyTtlSeconds: e.IDEMPOTENCY_TTL_SECONDS,
    batchMaxItems: e.BATCH_MAX_ITEMS,
    requestTimeoutMs: e.REQUEST_TIMEOUT_MS,
    bodyLimit: e.BODY_LIMIT,
    logLevel: e.LOG_LEVEL,
    chaosJobs: e.CHAOS_JOBS,
    demo: e.DEMO,
    apiKeys: Object.freeze((e.API_KEYS ?? []).map((k) => Object.freeze(k))),
    adminApiKeys: Object.freeze((e.ADMIN_API_KEYS ?? []).map((k) => Object.freeze(k))),
    rateLimitPerMinute: e.RATE_LIMIT_PER_MINUTE,
    rateLimitBurst: e.RATE_LIMIT_BURST ?? Math.max(1, Math.ceil(e.RATE_LIMIT_PER_MINUTE / 10)),
    trustedProxies: Object.freeze((e.TRUSTED_PROXIES ?? []).map((c) => Object.freeze(c))),
    redisEvictionCheck: e.REDIS_EVICTION_CHECK,
    apiDocs: e.API_DOCS ?? e.NODE_ENV !== 'production',
    queueDashboard: e.QUEUE_DASHBOARD,
    queueDashboardReadOnly: e.QUEUE_DASHBOARD_READONLY,
    webhooks:
      e.WEBHOOK_SECRET && e.WEBHOOK_ALLOWED_HOSTS
        ? Object.freeze({
            secret: e.WEBHOOK_SECRET,
            allowedHosts: Object.freeze(e.WEBHOOK_ALLOWED_HOSTS.map((h) => Object.freeze(h))),
            // why: a callback carries job results; in production they travel encrypted.
            schemes: Object.freeze(e.NODE_ENV === 'production' ? (['https:'] as const) : (['http:', 'https:'] as const)),
            allowPrivateAddresses: e.WEBHOOK_ALLOW_PRIVATE_ADDRESSES,
            maxAttempts: e.WEBHOOK_MAX_ATTEMPTS,
            backoffMs: e.WEBHOOK_BACKOFF_MS,
            timeoutMs: e.WEBHOOK_TIMEOUT_MS,
          })
        : undefined,
    otel: Object.freeze({
      endpoint: e.OTEL_EXPORTER_OTLP_ENDPOINT,
      headers: Object.freeze(e.OTEL_EXPORTER_OTLP_HEADERS ?? {}),
      serviceName: e.OTEL_SERVICE_NAME,
      sampleRatio: e.OTEL_TRACES_SAMPLER === 'parentbased_traceidratio' ? (e.OTEL_TRACES_SAMPLER_ARG ?? 1) : 1,
    }),
  });
}
