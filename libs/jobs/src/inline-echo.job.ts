import { isMainThread } from 'node:worker_threads';
import { z } from 'zod';
import { chaos } from './chaos.job';
import { defineJob } from './define-job';

/**
 * An inline type (see JobDefinition.inline): returns its input and where it ran, after busy-waiting
 * `spinMs` on the worker's event loop (a run past its 50 ms fails), or after awaiting `waitMs` (an
 * asynchronous run, which a cancel ends once it returns). CHAOS_JOBS only, like chaos.
 */
export const inlineEcho = defineJob({
  name: 'inline-echo',
  version: 1,
  description: "Test job run on the worker's event loop: returns `n` and whether it ran on the main thread, after `spinMs` (0–200) busy or `waitMs` (0–5000) awaited.",
  input: z.strictObject({ n: z.int().min(1).max(1e12), spinMs: z.int().min(0).max(200).default(0), waitMs: z.int().min(0).max(5000).default(0) }),
  output: z.object({ n: z.number(), mainThread: z.boolean() }),
  examples: [{ n: 42 }],
  inline: true,
  timeoutMs: 50,
  cacheTtlSeconds: 3600,
  run: async ({ n, spinMs, waitMs }, ctx) => {
    if (spinMs > 0) chaos.run({ mode: 'spin', ms: spinMs, lines: 0 }, ctx);
    if (waitMs > 0) await new Promise((resolve) => setTimeout(resolve, waitMs));
    ctx.progress(100);
    ctx.log.info({ n }, 'inline-echo ran');
    return { n, mainThread: isMainThread };
  },
});
