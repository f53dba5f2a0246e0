import { z } from 'zod';
import { defineJob, JobContext, JobDefinition, JobSchedule, JobShare, RetryPolicy } from './define-job';

/** Most children one job may split into: each is a BullMQ job of its own. */
export const MAX_CHUNKS = 1000;

type InputOfDef<D> = D extends JobDefinition<string, infer In, unknown, unknown> ? In : never;
type OutputOfDef<D> = D extends JobDefinition<string, unknown, infer Out, unknown> ? Out : never;

/**
 * Declares a job that splits its input into chunks run as child jobs of type `child` on every worker
 * consuming its queue (BullMQ flows), then merges their results: the seeds' partitioning, across
 * machines. The worker runs `split` and `merge` on a pool thread like any `run`; progress is the
 * children's average; cancelling the job cancels its children; a child that fails for good fails
 * it with JOB_CHILD_FAILED.
 *
 * why no `queue` of its own: on Redis Cluster, BullMQ needs a flow's parent and children under one
 * hash tag, so the parent goes to its child type's queue.
 */
export function defineFanOut<const Name extends string, In extends z.ZodType, Out extends z.ZodType, Child extends JobDefinition>(def: {
  name: Name;
  version: number;
  description: string;
  input: In;
  output: Out;
  /** Caps `split` and `merge` each; every child has its own type's timeout. */
  timeoutMs: number;
  cacheTtlSeconds: number;
  /** The start deadline of the fan-out job itself; its chunks, added once it runs, have none. */
  startWithinMs?: number;
  /** `all` by default; its children share as their own type declares, under the same caller. */
  share?: JobShare;
  retry?: Partial<RetryPolicy>;
  priority?: number;
  examples?: readonly z.input<In>[];
  schedules?: readonly JobSchedule<z.input<In>>[];
  child: Child;
  split(input: z.output<In>): InputOfDef<Child>[];
  merge(results: OutputOfDef<Child>[], input: z.output<In>): z.output<Out>;
}): JobDefinition<Name, z.output<In>, z.output<Out>, z.input<In>> {
  const { child, split, merge, ...rest } = def;
  const job = defineJob({
    ...rest,
    queue: child.queue,
    // The same result in one thread, chunk after chunk: what the worker spreads over its queue instead.
    async run(input: z.output<In>, ctx: JobContext) {
      const results: OutputOfDef<Child>[] = [];
      for (const chunk of checkedSplit(input)) results.push(await child.run(child.input.parse(chunk), ctx));
      return merge(results, input);
    },
  });
  const checkedSplit = (input: z.output<In>) => {
    const chunks = split(input);
    if (chunks.length < 1 || chunks.length > MAX_CHUNKS) throw new Error(`split gave ${chunks.length} chunks; 1 to ${MAX_CHUNKS} are allowed`);
    return chunks;
  };
  const fanOut = { child, split: checkedSplit, merge: merge as (results: unknown[], input: z.output<In>) => z.output<Out> };
  return Object.freeze({ ...job, fanOut: Object.freeze(fanOut) });
}
