import { z } from 'zod';
import { chaos } from './chaos.job';
import { defineJob } from './define-job';

/**
 * Busy for `ms` on a queue of its own, reporting progress: the long job of the tests of per-queue
 * routing, and the chunk of `fan-out`. CHAOS_JOBS only, like chaos. why `heavy`: the queue the
 * examples' long jobs use, so the tests route over two queues whichever examples are left.
 */
export const spin = defineJob({
  name: 'spin',
  version: 1,
  description: 'Test job on the heavy queue: busy for `ms` (0–600,000), or idle with `sleep`, reporting progress; returns its input.',
  input: z.strictObject({ ms: z.int().min(0).max(600_000).default(0), tag: z.string().max(64).optional(), sleep: z.boolean().optional() }),
  output: z.object({ ms: z.number(), tag: z.string().optional() }),
  examples: [{ ms: 200 }],
  queue: 'heavy',
  timeoutMs: 600_000,
  cacheTtlSeconds: 3600,
  // why `sleep`: chaos's sleep mode, for the tests that need a part running, not a core busy.
  run: ({ ms, tag, sleep }, ctx) => {
    chaos.run({ mode: sleep ? 'sleep' : 'spin', ms, lines: 0 }, ctx);
    return { ms, tag };
  },
});
