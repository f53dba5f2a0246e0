import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';

function read(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch {
    return undefined;
  }
}

/** CPUs the container's cgroup quota allows (v2 `cpu.max`, or v1 CFS quota/period), if any. */
export function cgroupCpuLimit(root = '/sys/fs/cgroup'): number | undefined {
  const v2 = read(`${root}/cpu.max`)?.split(/\s+/);
  if (v2 && v2[0] !== 'max' && Number(v2[0]) > 0 && Number(v2[1]) > 0) return Number(v2[0]) / Number(v2[1]);
  const quota = Number(read(`${root}/cpu/cpu.cfs_quota_us`));
  const period = Number(read(`${root}/cpu/cpu.cfs_period_us`));
  if (quota > 0 && period > 0) return quota / period;
  return undefined;
}

/**
 * How many threads of CPU work this process may run: the cores it can be scheduled on, capped by
 * a container CPU limit. why: os.availableParallelism() sees the node's cores, so a worker limited
 * to 2 CPUs on a 64-core node would otherwise start 64 pool threads.
 */
export function cpuBudget(): number {
  const limit = cgroupCpuLimit();
  const cores = availableParallelism();
  return Math.max(1, limit === undefined ? cores : Math.min(cores, Math.floor(limit)));
}
