import { z } from 'zod';
import { defineJob } from './define-job';
import { echoFields } from './echo.job';

/**
 * echo whose runs and results only the same caller shares (`share: 'caller'`), as for an input that
 * may hold a secret: what the tests of caller scopes submit. CHAOS_JOBS only, like chaos.
 */
export const privateEcho = defineJob({
  name: 'private-echo',
  version: 1,
  description: "Test job: echo with `share: 'caller'`: only the same API key joins its runs and reads its cached results.",
  input: z.strictObject(echoFields),
  output: z.object(echoFields),
  examples: [{ text: 'hunter2' }],
  timeoutMs: 30_000,
  cacheTtlSeconds: 3600,
  share: 'caller',
  run: (input) => input,
});
