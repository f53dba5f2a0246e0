import { pbkdf2Sync } from 'node:crypto';
import { z } from 'zod';
import { defineJob } from '../../libs/jobs/src/define-job';

const PROGRESS_EVERY_MS = 100;

/** The largest file `bench-file` takes: above the files scenario's 100 MB uploads. */
export const BENCH_FILE_MAX_BYTES = 256 * 1024 * 1024;

/** from + … + to, the loop itself (exact as a BigInt), calling `onProgress` with a percent about every 100 ms. */
export function sumRange(from: number, to: number, onProgress: (percent: number) => void): bigint {
  // why chunks: partial sums stay exact in a double below 2^53; each chunk is folded into a BigInt.
  const chunk = Math.max(1, Math.min(1 << 20, Math.floor(Number.MAX_SAFE_INTEGER / (to + 1))));
  let total = 0n;
  let lastReport = Date.now();
  for (let i = from; i <= to; ) {
    const end = Math.min(to, i + chunk - 1);
    let partial = 0;
    for (; i <= end; i++) partial += i;
    total += BigInt(partial);
    if (Date.now() - lastReport >= PROGRESS_EVERY_MS) {
      lastReport = Date.now();
      onProgress(Math.floor(((i - from) / (to - from + 1)) * 100));
    }
  }
  return total;
}

/** bench-pbkdf2's fixed arguments; its input brings the salt and the iterations. The seed servers use them too. */
export const PBKDF2_ARGS = { password: 'bench', keylen: 64, digest: 'sha512' } as const;

/**
 * The bench's own job types, declared like any other. why its own: the shipped types are examples
 * a service removes (`npm run remove:job`), and fibonacci, the one kept, takes 51 inputs: every job
 * after the first of each would be a cache hit or join a running one. A measured load needs any
 * number of distinct inputs of equal work.
 * - `bench-sum`: the loop from + … + to, reporting progress. Ten terms (`nextTrivial()`) are the
 *   trivial job, the per-job path with nothing else in it; billions run for seconds, to watch and cancel.
 * - `bench-sum-inline`: the same for short ranges as an inline type (JobDefinition.inline), to
 *   measure the pool thread's hop against running on the worker's event loop.
 * - `bench-pbkdf2`: PBKDF2-SHA512 (node:crypto, 64-byte key) of `iterations`, which the bench
 *   calibrates to a target time (~25 ms), with a fresh salt per job: the CPU job.
 * - `bench-sort`: sorts a list of numbers, the large payload (the payload scenario).
 * - `bench-file`: takes one file of up to BENCH_FILE_MAX_BYTES (a ZIP by its first bytes) and
 *   answers its size without reading it: the upload path alone (the files scenario), larger than
 *   `thumbnail`'s 32 MB.
 * The template's apps get them from bench-jobs.preload.ts; the baselines and peers import them from
 * here. `define` is the defineJob of the build that registers them (see the preload).
 */
export function declareBenchJobs(define: typeof defineJob) {
  const sum = define({
    name: 'bench-sum',
    version: 1,
    description: "The bench's loop: from + … + to, reporting progress. Exact decimal string.",
    input: z.strictObject({ from: z.int().min(1).max(1e12), to: z.int().min(1).max(1e12) }).refine((v) => v.from <= v.to, { message: 'from must not exceed to', path: ['from'] }),
    output: z.string().regex(/^\d+$/),
    // why this far out: the cost scenario's typical inputs count `from` down from here, 10 terms each.
    examples: [{ from: 1_000_001, to: 1_000_010 }],
    timeoutMs: 60_000,
    cacheTtlSeconds: 3600,
    run: ({ from, to }, ctx) => sumRange(from, to, (p) => ctx.progress(p)).toString(),
  });
  const sumInline = define({
    name: 'bench-sum-inline',
    version: 1,
    description: "bench-sum as an inline type: on the worker's event loop, for ranges of at most 1,000 terms.",
    input: z
      .strictObject({ from: z.int().min(1).max(1e12), to: z.int().min(1).max(1e12) })
      .refine((v) => v.from <= v.to && v.to - v.from < 1000, { message: 'from ≤ to, at most 1,000 terms', path: ['to'] }),
    output: z.string().regex(/^\d+$/),
    examples: [{ from: 1_000_001, to: 1_000_010 }],
    inline: true,
    timeoutMs: 100,
    cacheTtlSeconds: 3600,
    run: ({ from, to }, ctx) => sumRange(from, to, (p) => ctx.progress(p)).toString(),
  });
  const pbkdf2 = define({
    name: 'bench-pbkdf2',
    version: 1,
    description: "The bench's CPU job: PBKDF2-SHA512 of `iterations` (64-byte key), hex.",
    input: z.strictObject({ salt: z.string().min(1).max(64), iterations: z.int().min(1).max(10_000_000) }),
    output: z.object({ hash: z.string() }),
    examples: [{ salt: 'bench', iterations: 1000 }],
    timeoutMs: 60_000,
    cacheTtlSeconds: 3600,
    run: ({ salt, iterations }) => ({ hash: pbkdf2Sync(PBKDF2_ARGS.password, salt, iterations, PBKDF2_ARGS.keylen, PBKDF2_ARGS.digest).toString('hex') }),
  });
  const sort = define({
    name: 'bench-sort',
    version: 1,
    description: "The bench's large payload: sorts a list of numbers. BODY_LIMIT bounds its size.",
    input: z.strictObject({ numbers: z.array(z.number()) }),
    output: z.object({ sorted: z.array(z.number()) }),
    examples: [{ numbers: [3, 1, 2] }],
    timeoutMs: 30_000,
    cacheTtlSeconds: 300,
    run: ({ numbers }) => ({ sorted: Array.from(Float64Array.from(numbers).sort()) }),
  });
  const file = define({
    name: 'bench-file',
    version: 1,
    description: `The bench's upload: takes a file \`file\` (a ZIP by its first bytes, at most ${BENCH_FILE_MAX_BYTES} bytes) and answers its size, without reading it.`,
    input: z.strictObject({ label: z.string().max(100).default('') }),
    output: z.object({ bytes: z.int() }),
    files: { file: { maxBytes: BENCH_FILE_MAX_BYTES, accept: ['application/zip'] } },
    timeoutMs: 10_000,
    cacheTtlSeconds: 60,
    run: (_input, ctx) => ({ bytes: ctx.files!.file.bytes }),
  });
  return { sum, sumInline, pbkdf2, sort, file };
}

/** The bench's job types as these sources declare them (for the baselines and peers). */
export const benchJobs = declareBenchJobs(defineJob);
