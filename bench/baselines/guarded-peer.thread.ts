import { baselineJobs } from './baseline-jobs';
import { noProgress } from './no-progress';

/** The equal-guarantee peer's pool thread: the job type's `run`, called directly (see GuardedPeerProcessor). */
export default function run({ name, data }: { name: string; data: unknown }): unknown {
  return baselineJobs.get(name)!.run(data, noProgress);
}
