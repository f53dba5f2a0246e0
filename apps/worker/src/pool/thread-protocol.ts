import type { JobFailureCode } from '@app/jobs';

/**
 * What a task does: `run` a job; or, for a fan-out job, `split` its input into its children's
 * inputs, or `merge` their results (`partsJson`, a JSON array in chunk order) into its own.
 */
export type ThreadStep = 'run' | 'split' | 'merge';

/** A child job planned by `split`: its validated input as canonical JSON, and its content key. */
export interface PlannedChild {
  inputJson: string;
  key: string;
}

/** What the worker's main thread sends a pool thread. */
export interface ThreadTask {
  step: ThreadStep;
  /** Tags this task's progress messages on the pool's progress channel. */
  taskId: number;
  name: string;
  /** The version the job was submitted for: its input schema and code run it. */
  version: number;
  /** The job's input as JSON: parsed and validated here, off the worker's event loop. */
  inputJson: string;
  attempt: number;
  partsJson?: string;
}

/** What comes back. Errors travel as data: classes and their fields do not survive structured clone. */
export type ThreadResult = { ok: true; value: unknown } | { ok: false; code: JobFailureCode; message: string };

/** A progress report on the pool's BroadcastChannel. */
export interface ProgressMessage {
  taskId: number;
  percent: number;
}

/** What every pool thread gets as piscina's workerData. */
export interface ThreadData {
  /**
   * Name of this pool's BroadcastChannel. why one channel, not a MessagePort per task: piscina keeps
   * each transferred port alive in the thread, so a port per job leaked ~5 KB per job until the
   * thread ran out of heap.
   */
  progressChannel: string;
}
