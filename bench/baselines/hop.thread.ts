import type { MessagePort } from 'node:worker_threads';

/** A task that does nothing, shaped like the worker's (a progress port travels with it): the thread hop alone. */
export default function hop({ value, progress }: { value: unknown; progress: MessagePort }): { ok: true; value: unknown } {
  progress.close();
  return { ok: true, value };
}
