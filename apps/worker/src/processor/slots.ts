/** A counting semaphore: the pool's threads, shared by every queue this worker consumes. */
export class Slots {
  private free: number;
  private readonly queue: Array<() => void> = [];

  constructor(readonly size: number) {
    this.free = size;
  }

  /** Resolves once a slot is this caller's; waiters are served in arrival order. */
  acquire(): Promise<void> {
    if (this.tryAcquire()) return Promise.resolve();
    return new Promise((resolve) => this.queue.push(resolve));
  }

  /** Takes a slot if one is free now (and nobody waits for one); never waits. */
  tryAcquire(): boolean {
    if (this.free === 0 || this.queue.length > 0) return false;
    this.free--;
    return true;
  }

  release(): void {
    const next = this.queue.shift();
    if (next) next();
    else this.free = Math.min(this.size, this.free + 1);
  }

  /** Callers waiting for a slot. */
  get waiting(): number {
    return this.queue.length;
  }

  get inUse(): number {
    return this.size - this.free;
  }
}
