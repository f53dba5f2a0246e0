import { createHash } from 'node:crypto';
import { z } from 'zod';
import { defineJob } from './define-job';

/** The largest file `file-echo` takes: small, so the tests' 413 costs nothing. */
export const FILE_ECHO_MAX_BYTES = 64 * 1024;

const EXTENSIONS: Record<string, string> = { 'image/png': 'png', 'image/gif': 'gif', 'application/pdf': 'pdf' };

/**
 * Takes one file and returns its input with what its run read of the file, and the file itself
 * back as a result file: the tests' file type (multipart intake, content addressing, limits, result
 * files and their downloads), so no test depends on an example someone may remove. Registered,
 * like echo, only with CHAOS_JOBS=true. No examples: its submissions are multipart, with a file.
 */
export const fileEcho = defineJob({
  name: 'file-echo',
  version: 1,
  description: `Test job: takes a file \`file\` (PNG, GIF or PDF, at most ${FILE_ECHO_MAX_BYTES} bytes) and returns its input (\`label\`; \`holdMs\` it waits after writing its copy) with the file's size, type and SHA-256 as its run read them, and the file as \`copy.png\` (or .gif, .pdf).`,
  // holdMs: how long the run waits once it has written its copy, so a test can kill a worker mid-run.
  input: z.strictObject({ label: z.string().max(100).default(''), holdMs: z.int().min(0).max(20_000).default(0) }),
  output: z.object({ label: z.string(), bytes: z.int(), contentType: z.string(), sha256: z.string() }),
  files: { file: { maxBytes: FILE_ECHO_MAX_BYTES, accept: ['image/png', 'image/gif', 'application/pdf'] } },
  returnsFiles: true,
  timeoutMs: 30_000,
  cacheTtlSeconds: 3600,
  run: async ({ label, holdMs }, ctx) => {
    const file = ctx.files!.file;
    const bytes = await file.read();
    await ctx.writeFile!(`copy.${EXTENSIONS[file.contentType]}`, bytes, file.contentType);
    if (holdMs > 0) await new Promise((resolve) => setTimeout(resolve, holdMs));
    return { label, bytes: bytes.length, contentType: file.contentType, sha256: createHash('sha256').update(bytes).digest('hex') };
  },
});
