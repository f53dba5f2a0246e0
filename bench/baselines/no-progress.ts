import type { JobContext } from '../../libs/jobs/src/define-job';

/** The job context the baselines pass to `run`: first attempt, progress ignored. */
export const noProgress: JobContext = { attempt: 1, progress: () => undefined };
