import { z } from 'zod';
import { defineJob } from './define-job';

/** One field of each kind the API validates: a bounded integer and string, a list of numbers, a choice with a default. */
export const echoFields = {
  n: z.int().min(1).max(1e12).optional(),
  text: z.string().max(1024).optional(),
  numbers: z.array(z.number()).optional(),
  choice: z.enum(['a', 'b', 'c']).default('a'),
};

/**
 * Returns its input as it ran (defaults applied): the suite's cheap, cacheable job with inputs of
 * every kind, so no test depends on an example someone may remove. Registered, like chaos, only
 * with CHAOS_JOBS=true, which production refuses.
 */
export const echo = defineJob({
  name: 'echo',
  version: 1,
  description: 'Test job: returns its input, defaults applied (`n` 1–10^12, `text` up to 1024 characters, `numbers`, `choice` a|b|c).',
  input: z.strictObject(echoFields),
  output: z.object(echoFields),
  examples: [{ n: 42, text: 'hello', numbers: [3, 1, 2] }],
  timeoutMs: 30_000,
  cacheTtlSeconds: 3600,
  run: (input) => input,
});
