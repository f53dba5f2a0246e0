import { BroadcastChannel } from 'node:worker_threads';
import { workerData } from 'piscina';
import { allJobs, canonicalJson, contentKey, JobDefinition, JobFailureCode, JobRegistry, runnerOf } from '@app/jobs';
import type { PlannedChild, ProgressMessage, ThreadData, ThreadResult, ThreadTask } from './thread-protocol';

/**
 * The piscina thread entry: runs one job's pure `run` function, off every event loop.
 * No Nest and no Redis here; the thread knows only the job registry.
 */
const registry = new JobRegistry(allJobs);
const progress = new BroadcastChannel((workerData as ThreadData).progressChannel);
progress.unref();

export default async function runJob({ step, taskId, name, version, inputJson, attempt, partsJson }: ThreadTask): Promise<ThreadResult> {
  const def = registry.get(name);
  const runner = def && runnerOf(def, version);
  if (!runner) return { ok: false, code: JobFailureCode.JOB_REJECTED, message: `unknown job type "${name}" v${version}` };
  // why validate again: the API did, but a job can also reach the queue another way (a script, an
  // older API); bad input must fail once, not be retried. An older version's own schema reads its jobs.
  const parsed = runner.input.safeParse(safeParse(inputJson));
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
    if (step === 'split') return { ok: true, value: split(def, parsed.data) };
    if (step === 'merge') return { ok: true, value: def.fanOut!.merge(JSON.parse(partsJson!) as unknown[], parsed.data) };
    return { ok: true, value: await runner.run(parsed.data, ctx) };
  } catch (error) {
    return { ok: false, code: JobFailureCode.JOB_FAILED, message: error instanceof Error ? error.message : String(error) };
  }
}

/** A fan-out's children, each input validated by the child type's schema (defaults applied) and keyed. */
function split(def: JobDefinition, input: unknown): PlannedChild[] {
  const child = def.fanOut!.child;
  return def.fanOut!.split(input).map((chunk, i) => {
    const parsed = child.input.safeParse(chunk);
    if (!parsed.success) throw new Error(`split gave chunk ${i} an invalid ${child.name} input: ${parsed.error.issues[0]?.message}`);
    const inputJson = canonicalJson(parsed.data);
    return { inputJson, key: contentKey(child, inputJson) };
  });
}

function safeParse(json: string): unknown {
  try {
    return JSON.parse(json);
  } catch {
    return undefined;
  }
}
