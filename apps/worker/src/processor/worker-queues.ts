import { ConfigError } from '@app/config';
import type { JobRegistry } from '@app/jobs';

/** Injection token of the queues this worker consumes. */
export const WORKER_QUEUES = Symbol('WORKER_QUEUES');

/**
 * The queues named in WORKER_QUEUES, or every queue a registered type uses when it is unset.
 * A name that is neither a type's queue nor a deployed one (DEPLOYED_QUEUES) stops the worker: it is
 * a typo or a stale manifest, and a worker consuming a queue nobody fills would look healthy while
 * the real queue backs up.
 */
export function selectQueues(registry: JobRegistry, wanted: readonly string[] | undefined): string[] {
  if (!wanted) return registry.queues();
  const known = registry.workerQueues();
  const unknown = wanted.filter((name) => !known.includes(name));
  if (unknown.length > 0) {
    throw new ConfigError([`WORKER_QUEUES: there is no queue ${unknown.map((n) => `"${n}"`).join(', ')} (the queues are: ${known.join(', ')})`]);
  }
  return [...wanted];
}
