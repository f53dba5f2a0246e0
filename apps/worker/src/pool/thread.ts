import { BroadcastChannel } from 'node:worker_threads';
import { workerData } from 'piscina';
import { allJobs, JobFailureCode, JobRegistry } from '@app/jobs';
import type { ProgressMessage, ThreadData, ThreadResult, ThreadTask } from './thread-protocol';

/**
 * The piscina thread entry: runs one job's pure `run` function, off every event loop.
 * No Nest and no Redis here; the thread knows only the job registry.
 */
const registry = new JobRegistry(allJobs);
const progress = new BroadcastChannel((workerData as ThreadData).progressChannel);
progress.unref();

export default async function runJob({ taskId, name, inputJson, attempt }: ThreadTask): Promise<ThreadResult> {
  const def = registry.get(name);
  if (!def) return { ok: false, code: JobFailureCode.JOB_REJECTED, message: `unknown job type "${name}"` };
  // why validate again: the API did, but a job can also reach the queue another way (a script, an
  // older API); bad input must fail once, not be retried.
  const parsed = def.input.safeParse(safeParse(inputJson));
  if (!parsed.success) {
    return { ok: false, code: JobFailureCode.JOB_REJECTED, message: `invalid input: ${parsed.error.issues[0]?.message ?? 'unreadable'}` };
  }
  let last = -1;
  const ctx = {
    attempt,
    progress: (percent: number) => {
      const value = Math.max(0, Math.min(100, Math.round(percent)));
      if (value !== last) progress.postMessage({ taskId, percent: (last = value) } satisfies ProgressMessage);
    },
  };
  try {
    return { ok: true, value: await def.run(parsed.data, ctx) };
  } catch (error) {
    return { ok: false, code: JobFailureCode.JOB_FAILED, message: error instanceof Error ? error.message : String(error) };
  }
}

function safeParse(json: string): unknown {
  try {
    return JSON.parse(json);
  } catch {
    return undefined;
  }
}
