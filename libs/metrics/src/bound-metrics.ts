import { Counter, type Metric, Registry } from 'prom-client';

/**
 * Counters and histograms for the request path. A series is bound once to its label values and
 * updated with plain arithmetic; prom-client reads the numbers at scrape time. why: prom-client
 * validates and hashes the labels on every update, about 0.4 µs a counter and 1 µs a histogram
 * here, against about 0.01 µs this way; the API pays it on every request (a cache hit is ~60 µs).
 */
export interface BoundSeries {
  inc(by?: number): void;
}

export interface BoundObserver {
  observe(value: number): void;
}

interface MetricConfig<L extends string> {
  name: string;
  help: string;
  labelNames: readonly L[];
  registers: Registry[];
}

export class BoundCounter<L extends string> {
  private readonly series: Array<{ labels: Record<L, string>; value: number }> = [];

  constructor(config: MetricConfig<L>) {
    const all = this.series;
    new Counter<L>({
      ...config,
      labelNames: [...config.labelNames],
      collect() {
        this.reset();
        for (const { labels, value } of all) this.inc(labels, value);
      },
    });
  }

  /** The series of `labels` (exported from now on, at 0 until counted). Bind once, keep it. */
  bind(labels: Record<L, string>): BoundSeries {
    const series = { labels, value: 0 };
    this.series.push(series);
    return { inc: (by = 1) => void (series.value += by) };
  }
}

interface HistogramSeries<L extends string> {
  labels: Record<L, string>;
  /** Observations per bucket; the last one is +Inf. */
  counts: number[];
  sum: number;
}

export class BoundHistogram<L extends string> {
  readonly type = 'histogram';
  readonly aggregator = 'sum'; // remove:job: not a job type
  readonly name: string;
  readonly help: string;
  private readonly series: Array<HistogramSeries<L>> = [];

  constructor(config: MetricConfig<L> & { buckets: readonly number[] }, private readonly buckets = [...config.buckets].sort((a, b) => a - b)) {
    this.name = config.name;
    this.help = config.help;
    // why the cast: the registry takes any object with prom-client's metric shape (name, get, reset).
    for (const registry of config.registers) registry.registerMetric(this as unknown as Metric);
  }

  /** The series of `labels`. Bind once per label set and keep it. */
  bind(labels: Record<L, string>): BoundObserver {
    const series: HistogramSeries<L> = { labels, counts: new Array<number>(this.buckets.length + 1).fill(0), sum: 0 };
    this.series.push(series);
    const bounds = this.buckets;
    return {
      observe: (value) => {
        let i = 0;
        while (i < bounds.length && value > bounds[i]) i++;
        series.counts[i]++;
        series.sum += value;
      },
    };
  }

  /** What prom-client's registry formats: cumulative buckets, sum and count per series. */
  async get() {
    const values: Array<{ metricName: string; labels: Record<string, string | number>; value: number }> = [];
    for (const { labels, counts, sum } of this.series) {
      let cumulative = 0;
      counts.forEach((count, i) => {
        cumulative += count;
        values.push({ metricName: `${this.name}_bucket`, labels: { le: i < this.buckets.length ? this.buckets[i] : '+Inf', ...labels }, value: cumulative });
      });
      values.push({ metricName: `${this.name}_sum`, labels, value: sum });
      values.push({ metricName: `${this.name}_count`, labels, value: cumulative });
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  reset(): void {
    for (const series of this.series) {
      series.counts.fill(0);
      series.sum = 0;
    }
  }
}
