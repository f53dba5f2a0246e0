import { Injectable } from '@nestjs/common';

/** Whether the process is draining. Readiness turns false the moment a shutdown begins. */
@Injectable()
export class Lifecycle {
  private draining = false;
  private readonly listeners = new Set<() => void>();

  get shuttingDown(): boolean {
    return this.draining;
  }

  /** Marks the process as draining and tells everyone holding a request open to let go. */
  beginShutdown(): void {
    if (this.draining) return;
    this.draining = true;
    for (const listener of this.listeners) listener();
    this.listeners.clear();
  }

  /** Calls `listener` once when draining begins (at once if it has); returns a function that forgets it. */
  onShutdown(listener: () => void): () => void {
    if (this.draining) {
      listener();
      return () => undefined;
    }
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
