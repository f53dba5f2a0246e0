import { z } from 'zod';
import { defineJob } from './define-job';

const PROGRESS_EVERY_MS = 100;
// why: partial sums stay exact in a double below 2^53, so the hot loop adds plain numbers and only
// folds each chunk into a BigInt; the chunk end is also where the clock is read for progress.
const MAX_CHUNK = 1 << 20;

export function sumTo(n: number, onProgress: (percent: number) => void = () => {}): bigint {
  const chunk = Math.max(1, Math.min(MAX_CHUNK, Math.floor(Number.MAX_SAFE_INTEGER / (n + 1))));
  let total = 0n;
  let i = 1;
  let lastReport = Date.now();
  while (i <= n) {
    const end = Math.min(n, i + chunk - 1);
    let partial = 0;
    for (; i <= end; i++) partial += i;
    total += BigInt(partial);
    const now = Date.now();
    if (now - lastReport >= PROGRESS_EVERY_MS) {
      lastReport = now;
      onProgress(Math.floor(((i - 1) / n) * 100));
    }
  }
  return total;
}

export const sum = defineJob({
  name: 'sum',
  version: 1,
  description: 'The loop 1 + 2 + … + n, the seed articles\' "blocker", reporting progress as it goes. Exact result as a decimal string.',
  input: z.strictObject({ n: z.int().min(1).max(1e12) }),
  output: z.string().regex(/^\d+$/),
  examples: [{ n: 1_000_000 }],
  // why its own queue: n runs up to 10^12 (minutes of work); on their own workers, such jobs never
  // delay the short ones behind them.
  queue: 'heavy',
  timeoutMs: 60_000,
  cacheTtlSeconds: 3600,
  run: ({ n }, ctx) => {
    const started = Date.now();
    const total = sumTo(n, (p) => ctx.progress(p));
    // One line for long runs only (10^9 and up take seconds): routine jobs stay quiet.
    if (n >= 1e9) ctx.log.info({ ms: Date.now() - started }, 'summed a long range');
    return total.toString();
  },
});
