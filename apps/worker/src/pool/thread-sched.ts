import { execFileSync } from 'node:child_process';
import { readlinkSync } from 'node:fs';

/**
 * SCHED_IDLE for pool threads (WORKER_SCHED=idle): Linux then runs them only on CPU time no other
 * thread wants, so the event loops (the worker's own, a co-located API, Redis) are not queued
 * behind a job: a waking SCHED_OTHER thread preempts an idle-class one at once, whereas a nice-19
 * thread keeps its weight (15 against 1024, SCHED_IDLE's is 3) and may finish its slice first.
 * Measured (bench/tuning/isolation-settings.ts): the API's time runnable but waiting for a core
 * under job load fell from ~36 to ~12 µs per GET, at no cost to job throughput on an idle host.
 * Only threads in the same cgroup (container) or autogroup are ranked this way: against another
 * container's threads, the cgroups' CPU weights decide. That is also why it is the image's setting
 * and not the default: on a bare host (a laptop, CI, a VM running other services) any busy process
 * in the same group takes the cores, and idle-class threads get ~0.3% of one: jobs stall until
 * their timeout (test/chaos/redis-late.e2e-spec.ts beside two busy shell loops: 10-12 of its 50
 * small jobs unfinished after 30 s on idle, none on other).
 *
 * why util-linux's chrt: Node has no binding for sched_setscheduler(2) and @napi-rs/nice (piscina's
 * nice) only calls setpriority(2). chrt ships in every Debian image (util-linux is Essential; the
 * runtime image is node:26-bookworm-slim). Switching SCHED_OTHER → SCHED_IDLE needs no privilege.
 */

/** Why this host cannot put a thread on SCHED_IDLE (no chrt, not Linux, a seccomp filter), or undefined if it can. */
export function schedIdleUnavailable(): string | undefined {
  if (process.platform !== 'linux') return `SCHED_IDLE is Linux-only (this is ${process.platform})`;
  try {
    // why a throwaway child: it proves both that chrt exists and that the kernel lets us use the policy.
    execFileSync('chrt', ['--idle', '0', 'true'], { stdio: 'ignore', timeout: 5000 });
    return undefined;
  } catch (error) {
    const { code, message } = error as NodeJS.ErrnoException;
    return code === 'ENOENT' ? 'chrt (util-linux) is not installed' : `chrt --idle failed: ${message}`;
  }
}

/** Puts the calling thread (not its process) on SCHED_IDLE. Throws if chrt fails. */
export function enterSchedIdle(): void {
  // why /proc/thread-self: it names the calling thread's kernel tid, which Node does not expose;
  // chrt -p on a tid changes that one thread only, so the worker's event loop stays SCHED_OTHER.
  const tid = readlinkSync('/proc/thread-self').split('/').pop()!;
  execFileSync('chrt', ['--idle', '--pid', '0', tid], { stdio: 'ignore', timeout: 5000 });
}
