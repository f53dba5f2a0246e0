import { execFile, execFileSync, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

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
  // why a sleeping child moved from outside, not `chrt --idle 0 true`: that runs a program on
  // SCHED_IDLE and waits for it, and on a busy host an idle-class process waits for spare CPU
  // (10 s for `true` beside six busy Node processes here), so the probe timed out and the pool
  // stayed on SCHED_OTHER exactly where SCHED_IDLE matters. chrt itself runs on SCHED_OTHER.
  const sleeper = spawn('sleep', ['30'], { stdio: 'ignore' });
  try {
    if (sleeper.pid === undefined) return 'could not start `sleep` to try chrt on';
    execFileSync('chrt', ['--idle', '--pid', '0', String(sleeper.pid)], { stdio: 'ignore', timeout: 5000 });
    return undefined;
  } catch (error) {
    const { code, message } = error as NodeJS.ErrnoException;
    return code === 'ENOENT' ? 'chrt (util-linux) is not installed' : `chrt --idle failed: ${message}`;
  } finally {
    sleeper.on('error', () => undefined).unref();
    sleeper.kill('SIGKILL');
  }
}

/** Puts the calling thread (not its process) on SCHED_IDLE. Throws if chrt fails. */
export function enterSchedIdle(): void {
  // why /proc/thread-self: it names the calling thread's kernel tid, which Node does not expose;
  // chrt -p on a tid changes that one thread only, so the worker's event loop stays SCHED_OTHER.
  const tid = readlinkSync('/proc/thread-self').split('/').pop()!;
  execFileSync('chrt', ['--idle', '--pid', '0', tid], { stdio: 'ignore', timeout: 5000 });
}

/** The kernel ids of this process's threads now. */
export function threadIds(): Set<string> {
  return new Set(readdirSync('/proc/self/task'));
}

/**
 * Puts on SCHED_IDLE the threads of this process started since `before` (threadIds), libuv's excepted:
 * those a native module of a job started during its run. why: sharp hands an image to libvips's own
 * threads, which run the work while the pool thread only waits for them; they are started from
 * libuv's threads (SCHED_OTHER) and would run every thumbnail beside the event loops, not behind
 * them (the bench's worker: six `libvips worker` threads in SCHED_OTHER with all of a thumbnail
 * leg's CPU, its two SCHED_IDLE pool threads with none). Threads a module keeps for later runs
 * stay idle; one it starts anew is caught after the run that started it. Resolves with how many it moved.
 * why from the main thread, not the pool thread that ran the job: a program inherits the policy of
 * the thread that starts it, and chrt started from a SCHED_IDLE thread waits for spare CPU too (see
 * schedIdleUnavailable); why async: the worker's event loop does not wait for chrt either.
 */
export async function idleThreadsStartedSince(before: ReadonlySet<string>): Promise<number> {
  let moved = 0;
  for (const tid of threadIds()) {
    if (before.has(tid)) continue;
    try {
      if (readFileSync(`/proc/self/task/${tid}/comm`, 'utf8').trim() === 'libuv-worker') continue;
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      // The policy is the 41st field; the name in parentheses (2nd) may hold spaces.
      if (stat.slice(stat.lastIndexOf(') ') + 2).split(' ')[41 - 3] === String(SCHED_IDLE_POLICY)) continue;
      await run('chrt', ['--idle', '--pid', '0', tid], { timeout: 5000 });
      moved++;
    } catch {
      // The thread ended meanwhile: nothing to move.
    }
  }
  return moved;
}

const run = promisify(execFile);

/** SCHED_IDLE's number in /proc/<pid>/task/<tid>/stat. */
const SCHED_IDLE_POLICY = 5;
