/**
 * A small least-recently-used map with a size budget and per-entry expiry, for values that never
 * change once written (cached results are immutable for their content key).
 */
export class MemoryLru<V> {
  private readonly entries = new Map<string, { value: V; size: number; expiresAt: number }>();
  private used = 0;

  /** `maxSize` and `maxEntrySize` in the units of `set`'s `size` (here: characters of JSON). */
  constructor(
    private readonly maxSize: number,
    private readonly maxEntrySize: number,
  ) {}

  get(key: string, now = Date.now()): V | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    this.entries.delete(key);
    if (entry.expiresAt <= now) {
      this.used -= entry.size;
      return undefined;
    }
    this.entries.set(key, entry); // most recently used last
    return entry.value;
  }

  set(key: string, value: V, size: number, expiresAt: number): void {
    if (size > this.maxEntrySize || size > this.maxSize) return;
    const previous = this.entries.get(key);
    if (previous) {
      this.entries.delete(key);
      this.used -= previous.size;
    }
    this.entries.set(key, { value, size, expiresAt });
    this.used += size;
    for (const [oldest, entry] of this.entries) {
      if (this.used <= this.maxSize) break;
      this.entries.delete(oldest);
      this.used -= entry.size;
    }
  }

  get size(): number {
    return this.used;
  }
}
