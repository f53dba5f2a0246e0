import { readdirSync, readFileSync } from 'node:fs';

/** CPU ms each process on the host has used so far (/proc/<pid>/stat utime + stime), with its command name and parent. */
export type HostCpu = Map<number, { comm: string; ppid: number; ms: number }>;

// why 10: /proc counts these in clock ticks of 10 ms on every Linux the bench runs on (a fixed ABI, whatever the kernel's timer rate).
const MS_PER_TICK = 10;

export function hostCpu(): HostCpu {
  const snapshot: HostCpu = new Map();
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid)) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const close = stat.lastIndexOf(')');
      const fields = stat.slice(close + 2).split(' ');
      snapshot.set(pid, { comm: stat.slice(stat.indexOf('(') + 1, close), ppid: Number(fields[1]), ms: (Number(fields[11]) + Number(fields[12])) * MS_PER_TICK });
    } catch {
      // why skip: the process ended between listing and reading.
    }
  }
  return snapshot;
}

/**
 * CPU ms a process's threads have used so far, summed by scheduling policy or by thread name
 * (/proc/<pid>/task/<tid>/stat: utime + stime, and policy; the name in parentheses:
 * node-MainThread, libuv-worker, node-V8Worker, WorkerThread…).
 */
export function threadCpu(pid: number, by: 'policy' | 'name'): Record<string, number> {
  const policies = ['other', 'fifo', 'rr', 'batch', 'iso', 'idle'];
  const cpu: Record<string, number> = {};
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const close = stat.lastIndexOf(')');
      const fields = stat.slice(close + 2).split(' ');
      const key = by === 'name' ? stat.slice(stat.indexOf('(') + 1, close) : (policies[Number(fields[38])] ?? fields[38]);
      cpu[key] = (cpu[key] ?? 0) + (Number(fields[11]) + Number(fields[12])) * MS_PER_TICK;
    } catch {
      // why skip: the thread ended between listing and reading.
    }
  }
  return cpu;
}

/** The processes `parent` started (its children), from a snapshot. */
export function childrenOf(snapshot: HostCpu, parent: number): number[] {
  return [...snapshot].filter(([, p]) => p.ppid === parent).map(([pid]) => pid);
}

/**
 * Where the host's CPU went between two snapshots, in cores (CPU ms ÷ wall ms): the processes named
 * in `ours` by their label, every other process together as `others`, and the three busiest of those.
 */
export function hostCpuShares(before: HostCpu, after: HostCpu, wallMs: number, ours: Record<string, number[]>): { byLabel: Record<string, number>; others: number; topOthers: string[] } {
  const labelOf = new Map<number, string>();
  for (const [label, pids] of Object.entries(ours)) for (const pid of pids) labelOf.set(pid, label);
  const byLabel: Record<string, number> = Object.fromEntries(Object.keys(ours).map((label) => [label, 0]));
  const otherByComm = new Map<string, number>();
  let others = 0;
  for (const [pid, now] of after) {
    const used = (now.ms - (before.get(pid)?.ms ?? 0)) / wallMs;
    if (used <= 0) continue;
    const label = labelOf.get(pid);
    if (label) byLabel[label] += used;
    else {
      others += used;
      otherByComm.set(now.comm, (otherByComm.get(now.comm) ?? 0) + used);
    }
  }
  const topOthers = [...otherByComm].sort((a, b) => b[1] - a[1]).slice(0, 3).map(([comm, cores]) => `${comm} ${cores.toFixed(2)}`);
  return { byLabel, others, topOthers };
}
