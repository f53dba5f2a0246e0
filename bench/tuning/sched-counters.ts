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
