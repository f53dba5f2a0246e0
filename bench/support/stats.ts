/** Small statistics for the bench: percentiles of latency samples, and the spread of per-round figures. */

export interface LatencySummary {
  count: number;
  mean: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

/** The p-th percentile (nearest rank) of `values`, which need not be sorted. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))];
}

export function summarize(values: readonly number[]): LatencySummary {
  if (values.length === 0) return { count: 0, mean: NaN, p50: NaN, p90: NaN, p99: NaN, max: NaN };
  const sorted = [...values].sort((a, b) => a - b);
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
  return {
    count: sorted.length,
    mean: sorted.reduce((a, b) => a + b, 0) / sorted.length,
    p50: at(50),
    p90: at(90),
    p99: at(99),
    max: sorted[sorted.length - 1],
  };
}

/** A figure measured once per round: its median (the reported value), min and max. */
export interface Spread {
  median: number;
  min: number;
  max: number;
  values: number[];
}

export function spread(values: readonly number[]): Spread {
  const finite = values.filter(Number.isFinite);
  if (finite.length === 0) return { median: NaN, min: NaN, max: NaN, values: [...values] };
  const sorted = [...finite].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  const median = sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
  return { median, min: sorted[0], max: sorted[sorted.length - 1], values: [...values] };
}

/** Per-round figures of one measure, collected as the rounds run. */
export class Rounds {
  private readonly byName = new Map<string, number[]>();

  add(name: string, value: number): void {
    const list = this.byName.get(name) ?? [];
    list.push(value);
    this.byName.set(name, list);
  }

  get(name: string): Spread {
    return spread(this.byName.get(name) ?? []);
  }

  all(): Record<string, Spread> {
    return Object.fromEntries([...this.byName.keys()].map((k) => [k, this.get(k)]));
  }
}

export const round2 = (n: number) => Math.round(n * 100) / 100;
