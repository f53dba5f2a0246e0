import { pbkdf2 } from '../../libs/jobs/src/pbkdf2.job';
import { noProgress } from './no-progress';

/** Raw piscina's thread: the template's pbkdf2 `run`, called directly. */
export default function run(input: { password: string; salt: string; iterations: number }): Promise<{ hash: string }> | { hash: string } {
  return pbkdf2.run({ ...input, keylen: 64, digest: 'sha512' }, noProgress);
}
