import { z } from 'zod';
import { defineJob } from './define-job';

export const sort = defineJob({
  name: 'sort',
  version: 1,
  description: 'Sorts a large list of numbers (the seed articles\' "sorting a huge list"). BODY_LIMIT bounds its size.',
  input: z.strictObject({
    numbers: z.array(z.number()),
    order: z.enum(['asc', 'desc']).default('asc'),
  }),
  output: z.object({ sorted: z.array(z.number()) }),
  examples: [{ numbers: [3, 1, 2] }, { numbers: [0.5, -2, 10], order: 'desc' }],
  timeoutMs: 30_000,
  cacheTtlSeconds: 300,
  run: ({ numbers, order }) => {
    // why: a Float64Array sorts numerically without a comparator call per comparison.
    const sorted = Float64Array.from(numbers).sort();
    if (order === 'desc') sorted.reverse();
    return { sorted: Array.from(sorted) };
  },
});
