import { type JobContext, SILENT_LOG } from '../../libs/jobs/src/define-job';

/** The job context the baselines pass to `run`: first attempt, progress and logs ignored. */
export const noProgress: JobContext = { attempt: 1, progress: () => undefined, log: SILENT_LOG };
