/** How long a cancel is remembered for a job this worker has not started yet. */
const REMEMBER_MS = 60_000;

/**
 * Jobs whose cancel message arrived while this worker held them but had not begun their run (BullMQ
 * had handed them over, the run had not registered for abort yet); the run checks here first. A
 * job cancelled before any worker took it carries the cancel in its hash instead (see flagCancelled
 * in libs/queue), so neither costs a Redis command on the jobs nobody cancels.
 */
export class CancelRequests {
  private readonly ids = new Map<string, number>();

  add(id: string, now = Date.now()): void {
    this.ids.set(id, now + REMEMBER_MS);
    // why here: a cancel for a job this worker never takes (another worker ran it) must not linger.
    if (this.ids.size > 1000) for (const [known, until] of this.ids) if (until < now) this.ids.delete(known);
  }

  /** True (once) when a cancel was asked for job `id`. */
  take(id: string, now = Date.now()): boolean {
    const until = this.ids.get(id);
    if (until === undefined) return false;
    this.ids.delete(id);
    return until >= now;
  }
}
