import { z } from 'zod';

/** What a job's `run` gets besides its input. It runs inside a piscina thread: no Nest, no Redis. */
export interface JobContext {
  /** 1 on the first attempt, 2 on the first retry, … */
  readonly attempt: number;
  /** Reports progress (a percentage, 0-100) to whoever watches the job. Cheap; call it every ~100 ms. */
  progress(percent: number): void;
}

export interface RetryPolicy {
  /** Total attempts, the first included. Timeouts, cancellations and bad input never retry. */
  readonly attempts: number;
  /** Exponential backoff base: the n-th retry waits backoffMs * 2^(n-1). */
  readonly backoffMs: number;
}

export interface JobDefinition<Name extends string = string, In = any, Out = any> {
  readonly name: Name;
  /** Bump when `run` changes its result for the same input: it is part of the cache key. */
  readonly version: number;
  readonly description: string;
  /** Validates the request body; its output (defaults applied) is what `run` receives. */
  readonly input: z.ZodType<In>;
  readonly output: z.ZodType<Out>;
  /** The job's own limit; JOB_TIMEOUT_MS caps it. */
  readonly timeoutMs: number;
  /** How long a completed result is served from the Redis cache; 0 disables caching. */
  readonly cacheTtlSeconds: number;
  readonly retry: RetryPolicy;
  /** Pure CPU work. Runs in a worker thread, so it may block as long as it likes. */
  run(input: In, ctx: JobContext): Out | Promise<Out>;
}

const NAME = /^[a-z][a-z0-9-]{0,62}$/;

/**
 * Declares a job type. Everything else (API validation, the job-types listing, worker routing,
 * cache keys, metric labels) is derived from this one declaration.
 */
export function defineJob<const Name extends string, In extends z.ZodType, Out extends z.ZodType>(def: {
  name: Name;
  version: number;
  description: string;
  input: In;
  output: Out;
  timeoutMs: number;
  cacheTtlSeconds: number;
  retry?: Partial<RetryPolicy>;
  run(input: z.output<In>, ctx: JobContext): z.output<Out> | Promise<z.output<Out>>;
}): JobDefinition<Name, z.output<In>, z.output<Out>> {
  const problems = [
    !NAME.test(def.name) && `name must match ${NAME}`,
    !(Number.isInteger(def.version) && def.version > 0) && 'version must be a positive integer',
    !(Number.isInteger(def.timeoutMs) && def.timeoutMs > 0) && 'timeoutMs must be a positive integer',
    !(Number.isInteger(def.cacheTtlSeconds) && def.cacheTtlSeconds >= 0) && 'cacheTtlSeconds must be >= 0',
    def.retry?.attempts !== undefined && !(def.retry.attempts >= 1) && 'retry.attempts must be >= 1',
  ].filter(Boolean);
  if (problems.length > 0) throw new Error(`Job type "${def.name}": ${problems.join('; ')}`);
  return Object.freeze({
    ...def,
    retry: Object.freeze({ attempts: 3, backoffMs: 1000, ...def.retry }),
  }) as JobDefinition<Name, z.output<In>, z.output<Out>>;
}
