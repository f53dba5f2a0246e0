import type { ApiError } from '../http/api-error';
import type { JobWatch } from './job-notices';
import type { JobView } from './job-view';

/**
 * What became of one piece of work: answered from the cache, queued as a new job, joined an
 * identical job in flight (or, under an Idempotency-Key taken over, the job a request that died
 * had added), or refused (the backlog is full). `watch`, when the caller will wait, listens to the
 * job already.
 */
export type Outcome =
  | { kind: 'cached'; view: JobView }
  | { kind: 'queued'; view: JobView; watch?: JobWatch }
  | { kind: 'joined'; id: string; watch?: JobWatch }
  | { kind: 'rejected'; error: ApiError };
