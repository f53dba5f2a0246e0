import type { MessagePort } from 'node:worker_threads';
import type { JobFailureCode } from '@app/jobs';

/** What the worker's main thread sends a pool thread. */
export interface ThreadTask {
  name: string;
  input: unknown;
  attempt: number;
  /** Progress percentages flow back on this port while the job runs. */
  progress: MessagePort;
}

/** What comes back. Errors travel as data: classes and their fields do not survive structured clone. */
export type ThreadResult = { ok: true; value: unknown } | { ok: false; code: JobFailureCode; message: string };
