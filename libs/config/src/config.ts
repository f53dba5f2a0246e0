import { createHash } from 'node:crypto';
import { z } from 'zod';
import { type Cidr, parseCidr } from './cidr';
import { cpuBudget } from './cpu-budget';
import { weakKeys } from './key-strength';
import { type RedisAuth, type RedisTarget, resolveTarget, standalone } from './redis-target';
import { readCaFile } from './tls-ca';
import { type BlobTarget, blobTargetOf, defaultBlobTarget } from './blob-target';

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

/**
 * The name of a key listed without one: `key-` and the first 12 hex digits of its SHA-256. why not
 * its position: a key's name is the scope of its jobs and Idempotency-Keys, so removing one key from
 * the list must not hand its jobs to the key that moves into its place. A 48-bit prefix of the hash
 * of a 128-bit random key says nothing about it.
 */
export const bareKeyName = (key: string): string => `key-${createHash('sha256').update(key).digest('hex').slice(0, 12)}`;

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
    entries.map((entry) => {
      // why not split at any `=`: a bare base64 key ends in `=` padding (`openssl rand -base64 32`).
      const named = /^([\w.-]{1,64})=(.{16,})$/.exec(entry);
      return named ? { name: named[1], key: named[2] } : { name: bareKeyName(entry), key: entry };
    }),
  );

// Per-key fair-share limits: comma-separated `name:concurrency=N` or `name:queued=N` (name: an API_KEYS name).
const callerLimits = z
  .string()
  .transform((v) => v.split(',').map((entry) => entry.trim()).filter(Boolean))
  .pipe(
    z.array(
      z
        .string()
        .regex(/^[\w.-]{1,64}:(concurrency|queued)=\d{1,9}$/, 'each entry must be name:concurrency=N or name:queued=N (name: a key of API_KEYS)')
        .transform((entry) => {
          const [name, rest] = [entry.slice(0, entry.lastIndexOf(':')), entry.slice(entry.lastIndexOf(':') + 1)];
          const [limit, value] = rest.split('=');
          return { name, limit: limit as 'concurrency' | 'queued', value: Number(value) };
        }),
    ),
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

/** A host webhooks may call (see WEBHOOK_ALLOWED_HOSTS); without a port, the scheme's default port. */
export interface WebhookHost {
  readonly host: string;
  readonly port?: number;
  /** The API key (by name) whose callbacks may go there; undefined: every key's. */
  readonly key?: string;
}

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

/**
 * Every variable the apps read, with its parser and default: the one place a setting is declared.
 * Each one is a field of Config under its camelCase name (`MAX_BACKLOG` → `maxBacklog`), typed by
 * its parser, unless `assemble` below reads it into a field of another name or shape.
 */
const schema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  // Queue Redis (BullMQ): a URL, a Sentinel set or a Cluster (see queueRedis).
  REDIS_URL: redisUrl.optional(),
  REDIS_SENTINELS: hostList.optional(),
  REDIS_SENTINEL_NAME: sentinelName.optional(),
  REDIS_CLUSTER_NODES: hostList.optional(),
  REDIS_USERNAME: z.string().regex(/^[\x21-\x7e]{1,256}$/, 'must be 1-256 printable characters without spaces').optional(),
  REDIS_PASSWORD: z.string().max(4096, 'must be at most 4096 characters').optional(),
  REDIS_TLS: bool.default(false),
  REDIS_TLS_CA_FILE: z.string().trim().min(1).optional(),
  /** Replicas that must acknowledge a job's write (Redis WAIT) before the API answers 202; 0 is off. */
  REDIS_MIN_REPLICAS_ACK: int(0, 16).default(0),
  // Result-cache Redis (see cacheRedis).
  CACHE_REDIS_URL: redisUrl.optional(),
  CACHE_REDIS_SENTINELS: hostList.optional(),
  CACHE_REDIS_SENTINEL_NAME: sentinelName.optional(),
  CACHE_REDIS_CLUSTER_NODES: hostList.optional(),
  /** In-process memory for recently read cache entries (per replica); 0 turns it off. */
  CACHE_MEMORY_MB: int(0, 4096).default(16),
  /** Prefix of every Redis key this service writes (BullMQ's prefix too). */
  REDIS_PREFIX: z
    .string()
    .regex(/^[\w.-]{1,64}$/, 'must be 1-64 letters, digits, dots, dashes or underscores')
    .default('nest-offload'),
  HOST: z.string().min(1).default('0.0.0.0'),
  PORT: int(0, 65535).default(3000),
  WORKER_PORT: int(0, 65535).default(3001),
  WORKER_THREADS: int(1, 256).default(cpuBudget()),
  /** Queues this worker consumes; undefined means every queue a registered type uses. */
  WORKER_QUEUES: queueList.optional(),
  /** Heap limit of each pool thread; a job past it fails with JOB_OUT_OF_MEMORY. */
  WORKER_MAX_MEMORY_MB: int(16, 65536).default(512),
  /** Added to the pool threads' nice value so they yield the CPU to event loops. */
  WORKER_NICE: int(0, 19).default(19),
  /**
   * Linux scheduling policy of the pool threads: `idle` (SCHED_IDLE) runs them only when no other
   * thread wants the CPU; `other` is the default time sharing, where only WORKER_NICE weighs them.
   */
  WORKER_SCHED: z.enum(['idle', 'other'], { error: 'must be idle or other' }).default('other'),
  /** Upper bound on every job type's own timeout. */
  JOB_TIMEOUT_MS: int(100, 24 * 3600 * 1000).default(60_000),
  /** How long finished jobs stay readable by id. */
  JOB_RETENTION_SECONDS: int(1, 30 * 24 * 3600).default(3600),
  /** How long a job that failed for good is kept as a dead letter (input, error, attempts) to list and replay; 0: none kept. */
  DEAD_LETTER_RETENTION_SECONDS: int(0, 365 * 24 * 3600).default(30 * 24 * 3600),
  /**
   * `off`: neither app writes the listing index (libs/queue/src/job-index.ts) and GET /v1/jobs and
   * GET /admin/jobs answer 404 LISTING_DISABLED; a service that never lists jobs saves its Redis
   * bytes and commands per job.
   */
  JOB_LISTING: z.enum(['on', 'off'], { error: 'must be on or off' }).default('on'),
  /** BullMQ lock of a running job, renewed at half this; a job whose lock lapses is "stalled" and re-run. */
  JOB_LOCK_MS: int(1000, 600_000).default(30_000),
  SHUTDOWN_TIMEOUT_MS: int(0, 3600 * 1000).default(25_000),
  MAX_BACKLOG: int(1, 100_000_000).default(10_000),
  MAX_WAIT_SECONDS: int(0, 300).default(30),
  /** How long an Idempotency-Key is remembered: a retry within it gets the same job(s). */
  IDEMPOTENCY_TTL_SECONDS: int(1, 30 * 24 * 3600).default(86_400),
  /** Most items one POST /v1/jobs/{type}/batch may carry. */
  BATCH_MAX_ITEMS: int(1, 100_000).default(1000),
  /** Time a client has to send a whole request, headers and body; slower clients are cut off. */
  REQUEST_TIMEOUT_MS: int(1000, 600_000).default(30_000),
  BODY_LIMIT: size.default(5 * 1024 ** 2),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** `auto`: readable lines on a terminal outside production, JSON lines everywhere else. */
  LOG_FORMAT: z.enum(['auto', 'json', 'pretty']).default('auto'),
  /** Registers the `chaos` job type (crash, hang, leak on demand) for tests and drills. */
  CHAOS_JOBS: bool.default(false),
  /** Serves the /demo page (live event-loop chart). Never in production. */
  DEMO: bool.default(false),
  /** Client keys, accepted on /v1 (Authorization: Bearer or x-api-key) and /docs; empty means no authentication. */
  API_KEYS: apiKeys.default([]),
  /** Admin keys, the only ones accepted on /admin/* (the queue dashboard) once any key is set; never on /v1. */
  ADMIN_API_KEYS: apiKeys.default([]),
  ALLOW_UNAUTHENTICATED: bool.default(false),
  /** Jobs of one queue one API key may have released to workers at once (fair share); 0 is no limit. */
  CALLER_CONCURRENCY: int(0, 1_000_000).default(0),
  /** Jobs of one queue one API key may have waiting (fair share): past it, that key gets 429 CALLER_BACKLOG_FULL; 0 is no limit. */
  CALLER_MAX_QUEUED: int(0, 100_000_000).default(0),
  /** Per-key overrides of CALLER_CONCURRENCY and CALLER_MAX_QUEUED: `name:concurrency=N,name:queued=N`. */
  CALLER_LIMITS: callerLimits.default([]),
  /** Requests per minute per API key (per client IP without keys), shared by all replicas; 0 is off. */
  RATE_LIMIT_PER_MINUTE: int(0, 10_000_000).default(0),
  RATE_LIMIT_BURST: int(1, 10_000_000).optional(),
  /** Proxies whose X-Forwarded-For is read (only when one of them is the direct peer); empty: never read. */
  TRUSTED_PROXIES: cidrList.default([]),
  /**
   * How many proxies in front of the API append to X-Forwarded-For (an ingress controller: 1); at
   * most that many entries are read, from the right, whatever else is in TRUSTED_PROXIES.
   */
  TRUSTED_PROXY_HOPS: int(1, 16).default(1),
  TRUST_PROXY_HOPS: z.string().trim().optional(),
  /** What to do when the queue Redis may evict keys (evicted keys are lost jobs). */
  REDIS_EVICTION_CHECK: z.enum(['warn', 'refuse', 'off']).default('warn'),
  API_DOCS: bool.optional(),
  /** Serves the Bull Board queue dashboard at /admin/queues, to admin keys only when any key is set. */
  QUEUE_DASHBOARD: bool.default(false),
  QUEUE_DASHBOARD_READONLY: bool.default(true),
  // Webhooks (see webhooks).
  WEBHOOK_SECRET: webhookSecret.optional(),
  WEBHOOK_ALLOWED_HOSTS: webhookHostList.optional(),
  WEBHOOK_ALLOW_PRIVATE_ADDRESSES: bool.default(false),
  WEBHOOK_MAX_ATTEMPTS: int(1, 100).default(12),
  WEBHOOK_BACKOFF_MS: int(10, 3_600_000).default(5000),
  WEBHOOK_TIMEOUT_MS: int(100, 120_000).default(15_000),
  // Tracing (see otel).
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
  // Blob store (see blobStore).
  BLOB_STORE_URL: z.string().trim().optional(),
  /** Lets NODE_ENV=production use a file:// BLOB_STORE_URL (a directory every API and worker replica mounts). */
  BLOB_STORE_ALLOW_FILE: bool.default(false),
  /** How long an upload (POST /v1/uploads) waits for its bytes and its submission; its object is removed after. */
  UPLOAD_TTL_SECONDS: int(60, 7 * 24 * 3600).default(3600),
});

type Variables = z.output<typeof schema>;

/** A variable's field in Config: `MAX_BACKLOG` → `maxBacklog`. */
type FieldOf<Name extends string> = Name extends `${infer Head}_${infer Tail}` ? `${Lowercase<Head>}${Capitalize<FieldOf<Tail>>}` : Lowercase<Name>;
const fieldOf = (name: string): string => name.toLowerCase().replace(/_(.)/g, (_, letter: string) => letter.toUpperCase());

/** A value as Config holds it: a list frozen, and the entries in it. */
type Frozen<T> = T extends readonly (infer Entry)[] ? readonly Readonly<Entry>[] : T;
const frozen = (value: unknown): unknown =>
  Array.isArray(value) ? Object.freeze(value.map((entry: unknown) => (typeof entry === 'object' && entry !== null ? Object.freeze(entry) : entry))) : value;

/** Variables as fields of their own, each under its FieldOf name. */
type Fields<Vars> = { readonly [Name in keyof Vars as FieldOf<Name & string>]: Frozen<Vars[Name]> };
function fieldsOf<Vars extends object>(variables: Vars): Fields<Vars> {
  return Object.fromEntries(Object.entries(variables).map(([name, value]) => [fieldOf(name), frozen(value)])) as Fields<Vars>;
}

/** Variables whose values may hold credentials: never echoed in error messages. */
// why BLOB_STORE_URL: it must not hold credentials (they are refused there), but one pasted in is not echoed.
const SECRET = new Set(['REDIS_URL', 'CACHE_REDIS_URL', 'REDIS_PASSWORD', 'API_KEYS', 'ADMIN_API_KEYS', 'OTEL_EXPORTER_OTLP_HEADERS', 'WEBHOOK_SECRET', 'BLOB_STORE_URL']);

const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/**
 * The settings as the apps read them: every variable of the schema a field of its own (see FieldOf),
 * but for these, read into fields of another name or shape (the Redis ones into `queueRedis` and
 * `cacheRedis` by `loadConfig`; ALLOW_UNAUTHENTICATED and TRUST_PROXY_HOPS only checked there).
 */
function assemble(
  {
    NODE_ENV,
    REDIS_URL,
    REDIS_SENTINELS,
    REDIS_SENTINEL_NAME,
    REDIS_CLUSTER_NODES,
    REDIS_USERNAME,
    REDIS_PASSWORD,
    REDIS_TLS,
    REDIS_TLS_CA_FILE,
    CACHE_REDIS_URL,
    CACHE_REDIS_SENTINELS,
    CACHE_REDIS_SENTINEL_NAME,
    CACHE_REDIS_CLUSTER_NODES,
    ALLOW_UNAUTHENTICATED,
    RATE_LIMIT_BURST,
    TRUST_PROXY_HOPS,
    API_DOCS,
    QUEUE_DASHBOARD_READONLY,
    WEBHOOK_SECRET,
    WEBHOOK_ALLOWED_HOSTS,
    WEBHOOK_ALLOW_PRIVATE_ADDRESSES,
    WEBHOOK_MAX_ATTEMPTS,
    WEBHOOK_BACKOFF_MS,
    WEBHOOK_TIMEOUT_MS,
    OTEL_EXPORTER_OTLP_ENDPOINT,
    OTEL_EXPORTER_OTLP_HEADERS,
    OTEL_SERVICE_NAME,
    OTEL_TRACES_SAMPLER,
    OTEL_TRACES_SAMPLER_ARG,
    BLOB_STORE_URL,
    BLOB_STORE_ALLOW_FILE,
    ...own
  }: Variables,
  queueRedis: RedisTarget,
  cacheRedis: RedisTarget,
  blobStore: BlobTarget | undefined,
) {
  return Object.freeze({
    ...fieldsOf(own),
    env: NODE_ENV,
    /** Queue Redis (BullMQ): a URL, a Sentinel set or a Cluster. Must not evict keys. */
    queueRedis,
    /** Result-cache Redis; the queue Redis unless set, may be a separate one with an LRU policy. */
    cacheRedis,
    /** Requests a client may make at once before the per-minute rate applies. */
    rateLimitBurst: RATE_LIMIT_BURST ?? Math.max(1, Math.ceil(own.RATE_LIMIT_PER_MINUTE / 10)),
    /** Serves the OpenAPI document (/docs-json) and its interactive page (/docs); behind the API keys when set. */
    apiDocs: API_DOCS ?? NODE_ENV !== 'production',
    /** The dashboard only shows; retry, remove, pause, clean and add are refused. */
    queueDashboardReadOnly: QUEUE_DASHBOARD_READONLY,
    /** Signed callbacks on completion (Callback-Url); undefined means off: on when WEBHOOK_SECRET and WEBHOOK_ALLOWED_HOSTS are both set. */
    webhooks:
      WEBHOOK_SECRET && WEBHOOK_ALLOWED_HOSTS
        ? Object.freeze({
            /** Standard Webhooks signing secret (`whsec_…`). */
            secret: WEBHOOK_SECRET,
            allowedHosts: Object.freeze(WEBHOOK_ALLOWED_HOSTS.map((h) => Object.freeze(h))),
            /** URL schemes callbacks may use: https only in production. */
            // why: a callback carries job results; in production they travel encrypted.
            schemes: Object.freeze<('http:' | 'https:')[]>(NODE_ENV === 'production' ? ['https:'] : ['http:', 'https:']),
            /** Lets an allowed name resolve to a private, loopback or link-local address (internal receivers). */
            allowPrivateAddresses: WEBHOOK_ALLOW_PRIVATE_ADDRESSES,
            maxAttempts: WEBHOOK_MAX_ATTEMPTS,
            /** First retry delay; each next one doubles. */
            backoffMs: WEBHOOK_BACKOFF_MS,
            timeoutMs: WEBHOOK_TIMEOUT_MS,
          })
        : undefined,
    /** Tracing: on when the OTLP/HTTP endpoint is set (spans go to `<endpoint>/v1/traces`). */
    otel: Object.freeze({
      endpoint: OTEL_EXPORTER_OTLP_ENDPOINT,
      /** Sent with every export (e.g. a vendor's API key). */
      headers: Object.freeze(OTEL_EXPORTER_OTLP_HEADERS ?? {}),
      /** service.name; undefined means nest-offload-api or nest-offload-worker. */
      serviceName: OTEL_SERVICE_NAME,
      /** Share of requests (root spans) traced; a trace's other spans follow its root's decision. */
      sampleRatio: OTEL_TRACES_SAMPLER === 'parentbased_traceidratio' ? (OTEL_TRACES_SAMPLER_ARG ?? 1) : 1,
    }),
    /**
     * Where files (job inputs and results) are stored: BLOB_STORE_URL, or outside production a
     * directory under the system's temp dir when unset (see blob-target.ts). Undefined in production
     * when unset.
     */
    blobStore,
  });
}

/** Every setting the two apps read: derived from the schema, so a new variable is one line there. */
export type Config = ReturnType<typeof assemble>;

/** Webhook settings; present only when WEBHOOK_SECRET and WEBHOOK_ALLOWED_HOSTS are both set. */
export type WebhookConfig = NonNullable<Config['webhooks']>;

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
  const blob = e.BLOB_STORE_URL === undefined ? undefined : blobTargetOf(e.BLOB_STORE_URL);
  const blobStore = blob === undefined ? (e.NODE_ENV === 'production' ? undefined : defaultBlobTarget(e.REDIS_PREFIX)) : 'problem' in blob ? undefined : blob;
  const refused = [
    ...redisProblems,
    blob && 'problem' in blob && `BLOB_STORE_URL: ${blob.problem}`,
    e.NODE_ENV === 'production' &&
      blobStore?.kind === 'file' &&
      !e.BLOB_STORE_ALLOW_FILE &&
      'BLOB_STORE_URL: a file:// store when NODE_ENV=production needs BLOB_STORE_ALLOW_FILE=true (a directory every API and worker replica mounts, e.g. a ReadWriteMany volume); use an s3:// URL otherwise',
    ca && 'pem' in ca && !queueRedis.tls && !cacheRedis.tls && 'REDIS_TLS_CA_FILE: set, but no Redis is reached over TLS (set REDIS_TLS=true or use rediss:// URLs)',
    e.CHAOS_JOBS && e.NODE_ENV === 'production' && 'CHAOS_JOBS: must not be enabled when NODE_ENV=production',
    e.DEMO && e.NODE_ENV === 'production' && 'DEMO: must not be enabled when NODE_ENV=production',
    app === 'api' &&
      e.NODE_ENV === 'production' &&
      !e.API_KEYS.length &&
      !e.ALLOW_UNAUTHENTICATED &&
      'API_KEYS: required when NODE_ENV=production (set ALLOW_UNAUTHENTICATED=true if a gateway in front authenticates)',
    // why: in production the docs and the dashboard are served only behind the API keys.
    app === 'api' &&
      e.NODE_ENV === 'production' &&
      e.API_DOCS &&
      !e.API_KEYS.length &&
      'API_DOCS: needs API_KEYS when NODE_ENV=production (the docs are served behind the keys)',
    app === 'api' &&
      e.NODE_ENV === 'production' &&
      e.QUEUE_DASHBOARD &&
      !e.ADMIN_API_KEYS.length &&
      'QUEUE_DASHBOARD: needs ADMIN_API_KEYS when NODE_ENV=production (the dashboard is served to admin keys only)',
    new Set(e.API_KEYS.map((k) => k.name)).size !== e.API_KEYS.length && 'API_KEYS: key names must be unique',
    ...e.CALLER_LIMITS.filter((l) => !e.API_KEYS.some((k) => k.name === l.name)).map((l) => `CALLER_LIMITS: "${l.name}" names no key of API_KEYS`),
    new Set(e.ADMIN_API_KEYS.map((k) => k.name)).size !== e.ADMIN_API_KEYS.length && 'ADMIN_API_KEYS: key names must be unique',
    ...weakKeys('API_KEYS', e.API_KEYS),
    ...weakKeys('ADMIN_API_KEYS', e.ADMIN_API_KEYS),
    ...e.ADMIN_API_KEYS
      .filter((admin) => e.API_KEYS.some((client) => client.key === admin.key))
      .map((admin) => `ADMIN_API_KEYS: the key named "${admin.name}" is also one of API_KEYS; an admin key must be a key of its own`),
    // why refuse rather than ignore: it trusted X-Forwarded-For from whatever peer sent it; ignored, a
    // proxy's clients would silently share its address, and so its rate limit and failed-sign-in budget.
    e.TRUST_PROXY_HOPS !== undefined &&
      e.TRUST_PROXY_HOPS !== '0' &&
      'TRUST_PROXY_HOPS: no longer read; list the addresses of your proxies in TRUSTED_PROXIES instead (CIDRs, e.g. 10.0.0.0/8), and remove it',
    ...(e.WEBHOOK_ALLOWED_HOSTS ?? [])
      .filter((h) => h.key !== undefined && !e.API_KEYS.some((k) => k.name === h.key))
      .map((h) => `WEBHOOK_ALLOWED_HOSTS: "${h.key}=${h.host}" names no key of API_KEYS`),
    (e.WEBHOOK_SECRET === undefined) !== (e.WEBHOOK_ALLOWED_HOSTS === undefined) &&
      'WEBHOOK_SECRET and WEBHOOK_ALLOWED_HOSTS: set both to turn webhooks on, or neither',
  ].filter((p): p is string => typeof p === 'string');
  if (refused.length > 0) throw new ConfigError(refused);
  return assemble(e, queueRedis, cacheRedis, blobStore);
}
