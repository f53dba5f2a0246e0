import { performance } from 'node:perf_hooks';

/** Builds a `Server-Timing` header: how long each step of a request took, for clients and benchmarks. */
export class ServerTiming {
  private readonly entries: string[] = [];
  private last = performance.now();

  /** Records the time since the previous mark (or since creation) as step `name`. */
  mark(name: string): void {
    const now = performance.now();
    this.entries.push(`${name};dur=${(now - this.last).toFixed(2)}`);
    this.last = now;
  }

  toString(): string {
    return this.entries.join(', ');
  }
}
