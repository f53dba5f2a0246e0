import { execFileSync } from 'node:child_process';
import { cpus } from 'node:os';

/**
 * Pins whole processes (every thread: `taskset -a`) to CPUs, as a Kubernetes CPU limit with the
 * static CPU manager would give a container a core of its own, and puts each back as it was.
 * Threads a pinned process starts later inherit the mask from the thread that starts them.
 */
export class CpuPinning {
  private readonly saved = new Map<number, string>();

  /** Why processes cannot be pinned here (not Linux, no taskset, one CPU), or undefined if they can. */
  static unavailable(): string | undefined {
    if (process.platform !== 'linux') return `taskset is Linux-only (this is ${process.platform})`;
    if (cpus().length < 2) return 'one CPU: nothing to pin apart';
    try {
      execFileSync('taskset', ['-c', '-p', String(process.pid)], { stdio: 'ignore' });
      return undefined;
    } catch {
      return 'taskset (util-linux) is not installed';
    }
  }

  /** Pins every thread of `pid` to `cpuList` ("0", "1", "0-3"); the first pin of a pid saves its mask. */
  pin(pid: number, cpuList: string): void {
    if (!this.saved.has(pid)) this.saved.set(pid, affinityList(pid));
    execFileSync('taskset', ['-a', '-p', '-c', cpuList, String(pid)], { stdio: 'ignore' });
  }

  /** Puts every pinned process back on the CPUs it had (a process that has exited is skipped). */
  restore(): void {
    for (const [pid, list] of this.saved) {
      try {
        execFileSync('taskset', ['-a', '-p', '-c', list, String(pid)], { stdio: 'ignore' });
      } catch {
        // why ignore: the process exited meanwhile; nothing is left to restore.
      }
    }
    this.saved.clear();
  }
}

/** The CPU list a process may run on ("0,1"), from `taskset -c -p`. */
function affinityList(pid: number): string {
  const out = execFileSync('taskset', ['-c', '-p', String(pid)], { encoding: 'utf8' });
  return out.slice(out.lastIndexOf(':') + 1).trim();
}
