import { randomBytes } from 'node:crypto';

/**
 * What marks a test run's own things, so the global teardown can find whatever outlived its suite:
 * every process a test starts carries NEST_OFFLOAD_TEST_RUN in its environment, temp dirs go under
 * the run's TMPDIR, and key prefixes start with the run's id. Set by the global setup.
 */
export const RUN_VAR = 'NEST_OFFLOAD_TEST_RUN';

export function newRunId(): string {
  return randomBytes(4).toString('hex');
}

/** The current run's id (`local` outside a Jest run, e.g. a test file started by hand). */
export function runId(): string {
  return process.env[RUN_VAR] ?? 'local';
}

/**
 * The variables a child process needs to be found by the teardown check, to keep its temp files in
 * the run's dir and to share the run's compile cache (see global-setup.ts).
 */
export function runEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  if (process.env[RUN_VAR]) env[RUN_VAR] = process.env[RUN_VAR];
  if (process.env.TMPDIR) env.TMPDIR = process.env.TMPDIR;
  if (process.env.NODE_COMPILE_CACHE) env.NODE_COMPILE_CACHE = process.env.NODE_COMPILE_CACHE;
  return env;
}

/** The key prefix every e2e prefix of this run starts with. */
export function runPrefix(): string {
  return `e2e-${runId()}`;
}
