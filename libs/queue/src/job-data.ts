/** What the API stores in a BullMQ job; the job's name is its type. */
export interface JobData {
  /** Validated input, defaults applied. */
  input: unknown;
  /** Version of the job type the input was validated against. */
  version: number;
  /** Content key (type, version, input hash): the cache key and the deduplication id. */
  key: string;
  /** Request id of the submission, so the worker's log lines for this job carry it. */
  requestId?: string;
}
