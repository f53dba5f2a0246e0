import { z } from 'zod';
import { defineFanOut } from './define-fan-out';
import { sumRangeJob } from './sum-range.job';

/** [from, to] ranges that split 1…n into `chunks` parts of nearly equal length. */
export function ranges(n: number, chunks: number): Array<{ from: number; to: number }> {
  const parts = Math.min(chunks, n);
  return Array.from({ length: parts }, (_, i) => ({
    from: Math.floor((n * i) / parts) + 1,
    to: Math.floor((n * (i + 1)) / parts),
  }));
}

export const parallelSum = defineFanOut({
  name: 'parallel-sum',
  version: 1,
  description: "The sum 1 + … + n split into `chunks` sum-range jobs that every worker of the heavy queue shares, then added up.",
  input: z.strictObject({ n: z.int().min(1).max(1e12), chunks: z.int().min(1).max(64).default(8) }),
  output: z.string().regex(/^\d+$/),
  examples: [{ n: 10_000_000, chunks: 4 }],
  child: sumRangeJob,
  timeoutMs: 10_000,
  cacheTtlSeconds: 3600,
  split: ({ n, chunks }) => ranges(n, chunks),
  merge: (sums) => sums.reduce((total, part) => total + BigInt(part), 0n).toString(),
});
