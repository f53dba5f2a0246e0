/** The one BullMQ queue every API and worker replica shares. */
export const JOBS_QUEUE = 'jobs';

/** Names of the Redis keys and channels this service writes next to BullMQ's, under REDIS_PREFIX. */
export function queueKeys(prefix: string) {
  return {
    /** Pub/sub channel on which the API asks whichever worker runs a job to abort it. */
    cancelChannel: `${prefix}:cancel`,
    /** Set before a cancel is announced, so a worker that picks the job up later still sees it. */
    cancelMarker: (jobId: string) => `${prefix}:cancel:${jobId}`,
    /** The view of a job cancelled while still queued (BullMQ removes the job itself). */
    cancelledView: (jobId: string) => `${prefix}:cancelled:${jobId}`,
  };
}

export type QueueKeys = ReturnType<typeof queueKeys>;
