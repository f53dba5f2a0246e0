import { appendFileSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

/**
 * Where a test run's CPU goes, for making `npm test` cheaper: with TEST_CPU_LOG=<file> set, each suite
 * appends one JSON line (its Jest process's CPU and that of the children it reaped, see
 * cpu-environment.ts) and each app it starts one more (apps.ts). `node scripts/cpu-log.mjs <file>`
 * sums them. Unset, nothing is measured or written.
 */
export const CPU_LOG = process.env.TEST_CPU_LOG;

const ROOT = join(__dirname, '..', '..');
const TICKS_PER_S = 100; // why fixed: the kernel reports them in ticks of 1/100 s on every Linux ABI Node runs on

/** CPU-s of a process so far (its own, and with `children` those of the children it has reaped); undefined once it is gone. */
export function processCpu(pid: number | 'self', children = false): number | undefined {
  try {
    // why after the last ')': the command name in between may hold spaces and parentheses.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // fields[11..14] are utime, stime, cutime, cstime (stat(5) fields 14-17).
    const ticks = Number(fields[11]) + Number(fields[12]) + (children ? Number(fields[13]) + Number(fields[14]) : 0);
    return ticks / TICKS_PER_S;
  } catch {
    return undefined;
  }
}

/** A path as the log writes it: relative to the repository. */
export function suiteName(testPath: string): string {
  return relative(ROOT, testPath);
}

export function logCpu(record: Record<string, unknown>): void {
  if (CPU_LOG) appendFileSync(CPU_LOG, `${JSON.stringify(record)}\n`);
}
