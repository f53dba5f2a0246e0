import { z } from 'zod';
import { defineFanOut } from './define-fan-out';
import { spin } from './spin.job';

/**
 * The tests' fan-out (defineFanOut), whichever examples are left: `parts` spin jobs of `ms` each,
 * which every worker of the heavy queue shares, merged into their count and total. CHAOS_JOBS only.
 */
export const fanOut = defineFanOut({
  name: 'fan-out',
  version: 1,
  description: 'Test fan-out: `parts` (1–64) spin jobs of `ms` each (idle with `sleep`) on the heavy queue; the result is how many ran and their total ms.',
  input: z.strictObject({ parts: z.int().min(1).max(64), ms: z.int().min(0).max(600_000).default(0), tag: z.string().max(48).optional(), sleep: z.boolean().optional() }),
  output: z.object({ parts: z.number(), ms: z.number() }),
  examples: [{ parts: 2, ms: 100 }],
  child: spin,
  timeoutMs: 10_000,
  cacheTtlSeconds: 3600,
  // why a tag per part: equal inputs share a content key, so a worker could answer a later part from the cache.
  split: ({ parts, ms, tag = '', sleep }) => Array.from({ length: parts }, (_, i) => ({ ms, tag: `${tag}#${i}`, ...(sleep && { sleep }) })),
  merge: (results) => ({ parts: results.length, ms: results.reduce((total, part) => total + part.ms, 0) }),
});
