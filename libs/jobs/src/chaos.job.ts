import { z } from 'zod';
import { defineJob } from './define-job';

/**
 * Misbehaves on request, so tests and fire drills can prove that one bad job fails only itself.
 * Registered only with CHAOS_JOBS=true, which production refuses.
 */
export const chaos = defineJob({
  name: 'chaos',
  version: 1,
  description:
    'Test and drill job: ok (returns `result` as it is when given), spin (busy for ms), sleep (holds its thread for ms, idle), throw, flaky (fails its first attempt), exit, hang, leak; first writes `lines` log lines.',
  input: z.strictObject({
    mode: z.enum(['ok', 'spin', 'sleep', 'throw', 'flaky', 'exit', 'hang', 'leak']),
    ms: z.int().min(0).max(600_000).default(0),
    tag: z.string().max(64).optional(),
    lines: z.int().min(0).max(1_000_000).default(0),
    // why: falsy results (0, false, "", null) must reach a waiting caller like any other.
    result: z.union([z.number(), z.boolean(), z.string().max(64), z.null()]).optional(),
  }),
  output: z.union([z.object({ mode: z.string(), attempt: z.number(), ms: z.number() }), z.number(), z.boolean(), z.string(), z.null()]),
  examples: [{ mode: 'spin', ms: 200 }],
  timeoutMs: 600_000,
  cacheTtlSeconds: 0,
  retry: { attempts: 2, backoffMs: 100 },
  // why: a drill yields to real work in its queue (BullMQ takes jobs without a priority first).
  priority: 100,
  run: ({ mode, ms, tag, lines, result }, ctx) => {
    for (let line = 1; line <= lines; line++) ctx.log.info({ line, tag }, 'chaos: a log line from the job');
    switch (mode) {
      case 'throw':
        throw new Error('chaos: thrown on purpose');
      case 'flaky':
        if (ctx.attempt === 1) throw new Error('chaos: first attempt fails on purpose');
        break;
      case 'exit':
        process.exit(7);
      case 'hang':
        for (;;);
      case 'leak': {
        const hoard: number[][] = [];
        for (;;) hoard.push(new Array(1e6).fill(hoard.length));
      }
      // why sleep beside spin: most tests need a job that runs for a while, not a core kept busy, and
      // spins kept pool threads busy ~160 s in each `npm test`; a sleeping thread is stopped the same way (terminated).
      case 'spin':
      case 'sleep': {
        const start = Date.now();
        const idle = mode === 'sleep' ? new Int32Array(new SharedArrayBuffer(4)) : undefined;
        let last = start;
        while (Date.now() - start < ms) {
          if (idle) Atomics.wait(idle, 0, 0, Math.min(100, ms - (Date.now() - start)));
          if (Date.now() - last >= 100) {
            last = Date.now();
            ctx.progress(Math.floor(((last - start) / ms) * 100));
          }
        }
        break;
      }
    }
    return result !== undefined ? result : { mode, attempt: ctx.attempt, ms };
  },
});
