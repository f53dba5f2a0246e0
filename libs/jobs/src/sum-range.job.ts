import { z } from 'zod';
import { defineJob } from './define-job';
import { sumTo } from './sum.job';

/** from + (from+1) + … + to: the loop over its to-from+1 terms, shifted by from-1 each. */
export function sumRange(from: number, to: number, onProgress: (percent: number) => void = () => {}): bigint {
  const terms = to - from + 1;
  return sumTo(terms, onProgress) + BigInt(from - 1) * BigInt(terms);
}

export const sumRangeJob = defineJob({
  name: 'sum-range',
  version: 1,
  description: 'The loop from + … + to, reporting progress; the chunk parallel-sum fans out. Exact result as a decimal string.',
  input: z
    .strictObject({ from: z.int().min(1).max(1e12), to: z.int().min(1).max(1e12) })
    .refine((v) => v.from <= v.to, { message: 'from must not exceed to', path: ['from'] }),
  output: z.string().regex(/^\d+$/),
  examples: [{ from: 1, to: 1_000_000 }],
  queue: 'heavy',
  timeoutMs: 60_000,
  cacheTtlSeconds: 3600,
  run: ({ from, to }, ctx) => sumRange(from, to, (p) => ctx.progress(p)).toString(),
});
