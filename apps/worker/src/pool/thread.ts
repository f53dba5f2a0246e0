import { allJobs, JobFailureCode, JobRegistry } from '@app/jobs';
import type { ThreadResult, ThreadTask } from './thread-protocol';

/**
 * The piscina thread entry: runs one job's pure `run` function, off every event loop.
 * No Nest and no Redis here; the thread knows only the job registry.
 */
const registry = new JobRegistry(allJobs);

export default async function runJob({ name, input, attempt, progress }: ThreadTask): Promise<ThreadResult> {
  const def = registry.get(name);
  if (!def) return { ok: false, code: JobFailureCode.JOB_REJECTED, message: `unknown job type "${name}"` };
  let last = -1;
  const ctx = {
    attempt,
    progress: (percent: number) => {
      const value = Math.max(0, Math.min(100, Math.round(percent)));
      if (value !== last) progress.postMessage((last = value));
    },
  };
  try {
    return { ok: true, value: await def.run(input, ctx) };
  } catch (error) {
    return { ok: false, code: JobFailureCode.JOB_FAILED, message: error instanceof Error ? error.message : String(error) };
  } finally {
    progress.close();
  }
}
