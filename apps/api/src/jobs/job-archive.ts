import type { JobView } from './job-view';

/** Injection token of the dead-letters capability's archive (apps/api/src/dead-letters provides it). */
export const JOB_ARCHIVE = Symbol('JOB_ARCHIVE');

/** A failed job as an archive keeps it after BullMQ dropped it (JOB_RETENTION_SECONDS). */
export interface ArchivedJob {
  /** Its failed view; `replayedAs` names the job a replay submitted for it. */
  view: JobView;
  /** The scopes that owned it (with API keys; empty without). */
  owners: readonly string[];
}

/** What reads of a job ask of the dead-letters capability. */
export interface JobArchive {
  /** Job `id` as kept, or undefined: not kept (never failed for good, or expired). */
  find(id: string): Promise<ArchivedJob | undefined>;
}

/** Without the capability, a job is readable while BullMQ, the cancelled list or the cache holds it. */
export const NO_ARCHIVE: JobArchive = { find: () => Promise.resolve(undefined) };
