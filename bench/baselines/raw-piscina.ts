import { join } from 'node:path';
import Piscina from 'piscina';

/**
 * Raw piscina as a user would set it up for the CPU scenario: a fixed pool of `threads` running the
 * bench-pbkdf2 function in the bench process, piscina's defaults otherwise (`niceIncrement` 0 unless given).
 */
export function rawPiscina(threads: number, niceIncrement = 0): Piscina<{ salt: string; iterations: number }, { hash: string }> {
  return new Piscina({ filename: join(__dirname, 'raw-piscina.thread.js'), minThreads: threads, maxThreads: threads, niceIncrement });
}
