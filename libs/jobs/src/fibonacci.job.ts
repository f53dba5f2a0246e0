import { z } from 'zod';
import { defineJob } from './define-job';

function fib(n: number): number {
  return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

export const fibonacci = defineJob({
  name: 'fibonacci',
  version: 1,
  description: 'Naive recursive Fibonacci, the classic event-loop blocker: fib(38) takes about half a second.',
  input: z.strictObject({ n: z.int().min(0).max(50) }),
  output: z.number().int(),
  examples: [{ n: 30 }],
  // why: n up to 50 is accepted on purpose (fib(50) runs for minutes); the timeout protects the pool.
  timeoutMs: 30_000,
  cacheTtlSeconds: 3600,
  run: ({ n }) => fib(n),
});
