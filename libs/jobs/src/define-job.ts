import { z } from 'zod';
import { FILE_TYPES, type FileType } from './file-types';

/** What a job's `run` gets besides its input. It runs inside a piscina thread: no Nest, no Redis. */
export interface JobContext {
  /** 1 on the first attempt, 2 on the first retry, … */
  readonly attempt: number;
  /** Reports progress (a percentage, 0-100) to whoever watches the job. Cheap; call it every ~100 ms. */
  progress(percent: number): void;
  /**
   * Writes to the worker's log, pino style (`ctx.log.info({ rows }, 'parsed')`), with the job id,
   * request id, type, attempt and thread id added. Rate-limited per run (a burst of 50 lines, then
   * 10 a second); dropped lines are counted in a `job log lines dropped` line. Below LOG_LEVEL a
   * call does nothing.
   */
  readonly log: JobLogger;
  /** The files the job takes (see JobDefinition.files), by name; undefined for a type that declares none. */
  readonly files?: Readonly<Record<string, InputFile>>;
  /**
   * Returns a file besides the JSON result (a type with `returnsFiles`; undefined for others):
   * `data` as bytes or a stream, written to the blob store from this thread under its SHA-256. The
   * job view lists it in `files`, with a URL its owners download it from as `name` (letters,
   * digits and `._-`; each name once; `result.json` is the service's). Resolves once it is stored.
   */
  readonly writeFile?: (name: string, data: Uint8Array | AsyncIterable<Uint8Array>, contentType: string) => Promise<void>;
}

/** A file a job takes, as its run sees it on a pool thread. */
export interface InputFile {
  readonly sha256: string;
  readonly bytes: number;
  /** What its first bytes say it is: one of the types its declaration accepts. */
  readonly contentType: string;
  /** A path to open, when the blob store is a directory on this machine; undefined for S3. */
  readonly path?: string;
  /** Its bytes, read into this thread from the store (the file, or S3 by a presigned URL): never through the worker's event loop. */
  read(): Promise<Uint8Array>;
}

/** A log call: a message, or fields (JSON-serializable; an `err` Error keeps its message and stack) and a message. */
export interface JobLogFn {
  (msg: string): void;
  (fields: Record<string, unknown>, msg?: string): void;
}

export interface JobLogger {
  readonly trace: JobLogFn;
  readonly debug: JobLogFn;
  readonly info: JobLogFn;
  readonly warn: JobLogFn;
  readonly error: JobLogFn;
}

const ignore = () => undefined;
/** A JobLogger that writes nothing: for running `run` outside a worker (tests, baselines). */
export const SILENT_LOG: JobLogger = Object.freeze({ trace: ignore, debug: ignore, info: ignore, warn: ignore, error: ignore });

export interface RetryPolicy {
  /** Total attempts, the first included. Only some failures retry (see isRetried): a timeout, say, never does. */
  readonly attempts: number;
  /** Exponential backoff base: the n-th retry waits backoffMs * 2^(n-1). */
  readonly backoffMs: number;
}

/** The code that runs jobs of one version of a type. */
export interface JobRunner<Out = unknown> {
  readonly version: number;
  /** The input schema jobs of this version were validated against. */
  readonly input: z.ZodType;
  run(input: unknown, ctx: JobContext): Out | Promise<Out>;
}

/**
 * A version a type used to have, which its workers still run when a job of it is queued. With only
 * `version`, the current `input` and `run` take those jobs (declare it so only when they accept
 * them unchanged); with `input` and `run`, that version's own code runs them. See `previousVersion`.
 */
export interface PreviousVersion<Out = unknown> {
  readonly version: number;
  readonly input?: z.ZodType;
  readonly run?: (input: never, ctx: JobContext) => Out | Promise<Out>;
}

/** Keeps an old version's code runnable, typed by its own input schema. */
export function previousVersion<In extends z.ZodType, Out>(v: {
  version: number;
  input: In;
  run(input: z.output<In>, ctx: JobContext): Out | Promise<Out>;
}): PreviousVersion<Out> {
  return v;
}

/**
 * A recurring run of a job type, declared with the type: every `everyMs`, or on a `cron` expression
 * (5 fields, or 6 with seconds first; `tz` an IANA time zone, UTC by default). The API registers it
 * with BullMQ's job schedulers at start-up, so each tick is one job however many replicas run.
 */
export interface JobSchedule<In = unknown> {
  /** Unique within the type; the scheduler is `<type>:<name>` and its jobs `repeat:<type>:<name>:<ms>`. */
  readonly name: string;
  readonly cron?: string;
  readonly tz?: string;
  readonly everyMs?: number;
  /** Validated against the type's input schema when the type is declared (defaults applied). */
  readonly input: In;
}

/**
 * One job type. `In` is what `run` receives (defaults applied); `Submitted` is what a caller sends
 * (defaults optional), which typed clients use.
 */
export interface JobDefinition<Name extends string = string, In = any, Out = any, Submitted = In> {
  readonly name: Name;
  /** Bump when `run` changes its result for the same input: it is part of the cache key. */
  readonly version: number;
  readonly description: string;
  /** Validates the request body; its output (defaults applied) is what `run` receives. */
  readonly input: z.ZodType<In, Submitted>;
  readonly output: z.ZodType<Out>;
  /** The job's own limit; JOB_TIMEOUT_MS caps it. */
  readonly timeoutMs: number;
  /** How long a completed result is served from the Redis cache; 0 disables caching. */
  readonly cacheTtlSeconds: number;
  /**
   * The default start deadline of its jobs: one still waiting this long after its submission never
   * runs and ends `expired` (a `Start-Within` header overrides it; docs/api.md#start-deadlines).
   * Undefined: jobs wait as long as it takes.
   */
  readonly startWithinMs?: number;
  /**
   * Who shares this type's runs and results: `all` callers (identical inputs from any API key join
   * one run and one cached result), or only the same `caller` (its key's name scopes the content key,
   * so single flight and the cache never answer one key with another's work). Choose `caller` when
   * an input may hold a secret: with `all`, a cache hit or a joined run tells a caller that someone
   * submitted that exact input (e.g. confirms a guessed password).
   */
  readonly share: JobShare;
  readonly retry: RetryPolicy;
  /** The BullMQ queue its jobs go to; workers choose queues with WORKER_QUEUES. */
  readonly queue: string;
  /** BullMQ priority within its queue: 1 is taken first; jobs without one come before any with one. */
  readonly priority?: number;
  /** Versions before `version` whose queued jobs workers still run (a rolling update loses nothing). */
  readonly previousVersions: readonly PreviousVersion[];
  /**
   * Request bodies that show how to call it: the API docs show them, and a test submits each one.
   * Checked against `input` when the type is declared.
   */
  readonly examples: readonly unknown[];
  /** Recurring runs of this type, registered by the API at start-up (see JobSchedule). */
  readonly schedules: readonly JobSchedule<In>[];
  /** Set by `defineFanOut`: the job splits into child jobs that any worker runs, then merges their results. */
  readonly fanOut?: FanOut<In, Out>;
  /**
   * Runs on the worker's event loop instead of a pool thread (opt-in, for declared sub-millisecond
   * work): it saves the hop to a thread and back, and gives up what the thread gives (see
   * docs/job-types.md#inline-types): the timeout cannot stop it (a run longer than `timeoutMs`, at
   * most INLINE_MAX_TIMEOUT_MS, fails as JOB_TIMEOUT once it returns), a cancel cannot stop it, and a
   * crash or an out-of-memory takes the whole worker down with every job it holds.
   */
  readonly inline: boolean;
  /**
   * The files a job takes besides its JSON input, by name (a multipart/form-data part of that name).
   * Each is stored under its SHA-256 hash in the blob store, which the content key covers with the
   * input: the same file with the same input is one run, then a cache hit. Empty: JSON input only.
   */
  readonly files: Readonly<Record<string, FileInput>>;
  /** Whether its runs write result files to the blob store. */
  readonly returnsFiles: boolean;
  /**
   * Native addons its run loads on pool threads (`['sharp']`): the worker's main thread loads them
   * before the type's first run goes to a pool thread. why: a thread that exits (idle, timed out,
   * cancelled) must never be the last holder of their shared libraries; unloading libvips crashes
   * the process on glibc Linux (sharp's rule for worker threads). The API never loads them.
   */
  readonly nativeModules: readonly string[];
  /** Pure CPU work. Runs in a worker thread (unless `inline`), so it may block as long as it likes. */
  run(input: In, ctx: JobContext): Out | Promise<Out>;
}

/** A file a type takes besides its JSON input (see JobDefinition.files). */
export interface FileInput {
  /** The largest size accepted, in bytes: a bigger file is cut off at this size with 413. */
  readonly maxBytes: number;
  /** The content types accepted, recognized by the file's first bytes (see file-types.ts), not the client's header; else 415. */
  readonly accept: readonly FileType[];
}

/** How a fan-out job splits and merges (see define-fan-out.ts). Both run on a pool thread. */
export interface FanOut<In = unknown, Out = unknown> {
  /** The type each chunk runs as; it shares the parent's queue. */
  readonly child: JobDefinition;
  /** The inputs of the children, in order. */
  split(input: In): unknown[];
  /** The result, from the children's results in the order `split` gave their inputs. */
  merge(results: unknown[], input: In): Out;
}

/** Who shares a type's runs and results (see JobDefinition.share). */
export type JobShare = 'all' | 'caller';

/** The queue of every type that names none. */
export const DEFAULT_QUEUE = 'default';
/**
 * The queues the shipped manifests run workers for (docker/compose.yaml, docker/kubernetes), used by
 * a type or not. why: once `remove:job` has taken a queue's last type, its workers idle on it (KEDA
 * scales them to zero) instead of refusing to start. Drop a queue here together with its workers.
 */
export const DEPLOYED_QUEUES: readonly string[] = [DEFAULT_QUEUE, 'heavy'];
/** BullMQ's priority range (1 … 2^21). */
const MAX_PRIORITY = 2 ** 21;

export const JOB_NAME = /^[a-z][a-z0-9-]{0,62}$/;
// why short: the queue name is in every Redis key of the queue and in metric labels.
export const QUEUE_NAME = /^[a-z][a-z0-9-]{0,30}$/;
export const SCHEDULE_NAME = /^[a-z][a-z0-9-]{0,62}$/;
/** A declared file's name: its multipart part's name too (`input` is the JSON input's part). */
export const FILE_NAME = /^[a-z][a-z0-9_]{0,62}$/;
/** The largest file a type may accept: the largest object S3 copies in one request (a stored upload is copied to its hash). */
export const MAX_FILE_BYTES = 5 * 1024 ** 3;
/**
 * The longest start deadline, declared or asked for (`Start-Within` is capped at it): a week, as
 * long as a queued job's owners are kept.
 */
export const MAX_START_WITHIN_MS = 7 * 24 * 3600 * 1000;
/** The shortest interval a schedule may declare. */
export const MIN_SCHEDULE_EVERY_MS = 1000;
/** The longest `timeoutMs` an inline type may declare: it blocks the worker's event loop that long. */
export const INLINE_MAX_TIMEOUT_MS = 100;

/**
 * Declares a job type. Everything else (API validation, the job-types listing, queue routing,
 * worker routing, cache keys, metric labels) is derived from this one declaration.
 */
export function defineJob<const Name extends string, In extends z.ZodType, Out extends z.ZodType>(def: {
  name: Name;
  version: number;
  description: string;
  input: In;
  output: Out;
  timeoutMs: number;
  cacheTtlSeconds: number;
  startWithinMs?: number;
  /** `all` by default. */
  share?: JobShare;
  retry?: Partial<RetryPolicy>;
  queue?: string;
  priority?: number;
  // why not typed by Out: a bump may change the result's shape; old jobs keep their old one.
  previousVersions?: readonly PreviousVersion[];
  examples?: readonly z.input<In>[];
  schedules?: readonly JobSchedule<z.input<In>>[];
  /** false by default. */
  inline?: boolean;
  files?: Record<string, FileInput>;
  /** false by default. */
  returnsFiles?: boolean;
  nativeModules?: readonly string[];
  run(input: z.output<In>, ctx: JobContext): z.output<Out> | Promise<z.output<Out>>;
}): JobDefinition<Name, z.output<In>, z.output<Out>, z.input<In>> {
  const previous = def.previousVersions ?? [];
  const examples = def.examples ?? [];
  const schedules = (def.schedules ?? []).map((s) => checkedSchedule(def.input, s));
  const files = Object.entries(def.files ?? {});
  const problems = [
    !JOB_NAME.test(def.name) && `name must match ${JOB_NAME}`,
    !(Number.isInteger(def.version) && def.version > 0) && 'version must be a positive integer',
    !(Number.isInteger(def.timeoutMs) && def.timeoutMs > 0) && 'timeoutMs must be a positive integer',
    !(Number.isInteger(def.cacheTtlSeconds) && def.cacheTtlSeconds >= 0) && 'cacheTtlSeconds must be >= 0',
    def.startWithinMs !== undefined && !(Number.isInteger(def.startWithinMs) && def.startWithinMs > 0 && def.startWithinMs <= MAX_START_WITHIN_MS) &&
      `startWithinMs must be an integer from 1 to ${MAX_START_WITHIN_MS}`,
    def.retry?.attempts !== undefined && !(def.retry.attempts >= 1) && 'retry.attempts must be >= 1',
    def.queue !== undefined && !QUEUE_NAME.test(def.queue) && `queue must match ${QUEUE_NAME}`,
    def.share !== undefined && def.share !== 'all' && def.share !== 'caller' && "share must be 'all' or 'caller'",
    def.priority !== undefined && !(Number.isInteger(def.priority) && def.priority >= 1 && def.priority <= MAX_PRIORITY) && `priority must be an integer from 1 to ${MAX_PRIORITY}`,
    previous.some((p) => !(Number.isInteger(p.version) && p.version > 0 && p.version < def.version)) &&
      'previousVersions must be positive integers below version',
    new Set(previous.map((p) => p.version)).size !== previous.length && 'previousVersions must not repeat a version',
    previous.some((p) => (p.input === undefined) !== (p.run === undefined)) && 'a previous version gives both input and run, or neither',
    ...examples.map((example, i) => {
      const parsed = def.input.safeParse(example);
      return !parsed.success && `examples[${i}] does not match input: ${parsed.error.issues.map((issue) => `${issue.path.join('.') || '(body)'} ${issue.message}`).join(', ')}`;
    }),
    new Set(schedules.map((s) => s.name)).size !== schedules.length && 'schedules must not repeat a name',
    ...schedules.map((s) => s.problem),
    ...files.map(([name, file]) => checkedFile(name, file)),
    def.inline === true && (files.length > 0 || def.returnsFiles === true) && 'an inline type takes and returns no files (its run would block the event loop on them)',
    def.inline === true && (def.nativeModules?.length ?? 0) > 0 && 'an inline type loads no native modules (it runs on no pool thread)',
    def.inline === true && def.timeoutMs > INLINE_MAX_TIMEOUT_MS && `an inline type's timeoutMs must be at most ${INLINE_MAX_TIMEOUT_MS} (it blocks the worker's event loop)`,
  ].filter(Boolean);
  if (problems.length > 0) throw new Error(`Job type "${def.name}": ${problems.join('; ')}`);
  return Object.freeze({
    ...def,
    queue: def.queue ?? DEFAULT_QUEUE,
    share: def.share ?? 'all',
    inline: def.inline ?? false,
    files: Object.freeze(Object.fromEntries(files.map(([name, file]) => [name, Object.freeze({ maxBytes: file.maxBytes, accept: Object.freeze([...file.accept]) })]))),
    returnsFiles: def.returnsFiles ?? false,
    nativeModules: Object.freeze([...(def.nativeModules ?? [])]),
    previousVersions: Object.freeze([...previous]),
    examples: Object.freeze([...examples]),
    schedules: Object.freeze(schedules.map(({ problem, ...s }) => Object.freeze(s))),
    retry: Object.freeze({ attempts: 3, backoffMs: 1000, ...def.retry }),
  }) as JobDefinition<Name, z.output<In>, z.output<Out>, z.input<In>>;
}

/** What is wrong with declared file `name`, or false. */
function checkedFile(name: string, file: FileInput): string | false {
  const problems = [
    (!FILE_NAME.test(name) || name === 'input') && `file names must match ${FILE_NAME} and not be "input"`,
    !(Number.isInteger(file.maxBytes) && file.maxBytes > 0 && file.maxBytes <= MAX_FILE_BYTES) && `maxBytes must be an integer from 1 to ${MAX_FILE_BYTES}`,
    !(file.accept.length > 0 && file.accept.every((type) => (FILE_TYPES as readonly string[]).includes(type))) && `accept must list some of ${FILE_TYPES.join(', ')}`,
  ].filter(Boolean);
  return problems.length > 0 && `file ${JSON.stringify(name)}: ${problems.join('; ')}`;
}

/**
 * A schedule as declared, with its input validated by the type's schema (defaults applied), or the
 * problem with it. The cron expression itself is checked by the apps at start-up, with the parser
 * BullMQ uses (see libs/queue's checkSchedules): pool threads load this file and need no parser.
 */
function checkedSchedule(input: z.ZodType, s: JobSchedule): JobSchedule & { problem?: string } {
  const name = `schedule ${JSON.stringify(s.name)}`;
  const parsed = input.safeParse(s.input);
  const problem = [
    !SCHEDULE_NAME.test(s.name) && `schedule names must match ${SCHEDULE_NAME}`,
    (s.cron === undefined) === (s.everyMs === undefined) && `${name} needs exactly one of cron and everyMs`,
    s.everyMs !== undefined && !(Number.isInteger(s.everyMs) && s.everyMs >= MIN_SCHEDULE_EVERY_MS) &&
      `${name}: everyMs must be an integer of at least ${MIN_SCHEDULE_EVERY_MS}`,
    s.tz !== undefined && s.cron === undefined && `${name}: tz applies to cron schedules only`,
    !parsed.success && `${name}: invalid input (${parsed.error.issues.map((i) => `${i.path.map(String).join('.') || 'input'}: ${i.message}`).join('; ')})`,
  ].filter(Boolean);
  const schedule: JobSchedule = {
    name: s.name,
    ...(s.cron === undefined ? {} : { cron: s.cron }),
    ...(s.tz === undefined ? {} : { tz: s.tz }),
    ...(s.everyMs === undefined ? {} : { everyMs: s.everyMs }),
    input: parsed.data,
  };
  return problem.length > 0 ? { ...schedule, problem: problem.join('; ') } : schedule;
}

/**
 * The code that runs a job of `version`: the current one, a kept previous one, or undefined for a
 * version this type never had (or dropped).
 */
export function runnerOf(def: JobDefinition, version: number): JobRunner | undefined {
  if (version === def.version) return { version, input: def.input, run: (input, ctx) => def.run(input, ctx) };
  const previous = def.previousVersions.find((p) => p.version === version);
  if (!previous) return undefined;
  const run = (previous.run ?? def.run) as (input: unknown, ctx: JobContext) => unknown;
  return { version, input: previous.input ?? def.input, run };
}

/** Every version of `def` this build still runs, newest first. */
export function knownVersions(def: JobDefinition): number[] {
  return [def.version, ...def.previousVersions.map((p) => p.version).sort((a, b) => b - a)];
}
