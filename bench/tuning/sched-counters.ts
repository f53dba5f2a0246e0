import { readdirSync, readFileSync } from 'node:fs';

/** What the kernel counted for one process, summed over its threads (Linux /proc). */
export interface SchedCounters {
  /** CPU time used (user + system), ms. */
  cpuMs: number;
  /** Time its threads were runnable but waiting for a CPU (schedstat's 2nd field), ms: wake-up latency. */
  waitMs: number;
  /** Times a thread gave up the CPU itself (blocked in epoll, a lock…). */
  voluntary: number;
  /** Times a thread was preempted while it still wanted the CPU. */
  involuntary: number;
}

/** The counters of every thread of `pid`, summed. A thread that exits between the reads is skipped. */
export function schedCounters(pid: number): SchedCounters {
  const total: SchedCounters = { cpuMs: 0, waitMs: 0, voluntary: 0, involuntary: 0 };
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const [runNs, waitNs] = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ').map(Number);
      const status = readFileSync(`/proc/${pid}/task/${tid}/status`, 'utf8');
      total.cpuMs += runNs / 1e6;
      total.waitMs += waitNs / 1e6;
      total.voluntary += Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(status)?.[1] ?? 0);
      total.involuntary += Number(/^nonvoluntary_ctxt_switches:\s+(\d+)/m.exec(status)?.[1] ?? 0);
    } catch {
      // why skip: the thread ended between listing and reading.
    }
  }
  return total;
}

/** `after` − `before`, field by field. */
export function delta(after: SchedCounters, before: SchedCounters): SchedCounters {
  return {
    cpuMs: after.cpuMs - before.cpuMs,
    waitMs: after.waitMs - before.waitMs,
    voluntary: after.voluntary - before.voluntary,
    involuntary: after.involuntary - before.involuntary,
  };
}

/**
 * Waits until `pids` together use less than 10 ms of CPU in 200 ms (what they were doing has ended),
 * for at most 10 s; resolves false when they were still busy then.
 */
export async function untilQuiet(pids: readonly number[]): Promise<boolean> {
  const total = () => pids.reduce((sum, pid) => sum + schedCounters(pid).cpuMs, 0);
  const deadline = Date.now() + 10_000;
  for (let last = total(); Date.now() < deadline; ) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    const now = total();
    if (now - last < 10) return true;
    last = now;
  }
  return false;
}
