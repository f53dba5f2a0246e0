import { benchJobs } from '../support/bench-jobs';
import { noProgress } from './no-progress';

/** Raw piscina's thread: bench-pbkdf2's `run`, called directly. */
export default function run(input: { salt: string; iterations: number }): Promise<{ hash: string }> | { hash: string } {
  return benchJobs.pbkdf2.run(input, noProgress);
}
