import type { Spread } from '../support/stats';

/** One line of the results table. */
export interface Row {
  scenario: string;
  measure: string;
  template: string;
  baseline: string;
  /** Median of the per-round ratios, with min and max. */
  ratio?: Spread;
  target?: string;
  /** Undefined for figures shown for context only. */
  met?: boolean;
}

/** One small bar chart of the SVG: a few bars with a shared scale. */
export interface ChartPanel {
  title: string;
  unit: string;
  bars: Array<{ label: string; value: number; template: boolean }>;
}

export interface ScenarioReport {
  key: string;
  title: string;
  rows: Row[];
  /** Throughput (left) and p99 latency (right) panels for the chart. */
  chart: { throughput?: ChartPanel; latency?: ChartPanel };
  /** Extra markdown (breakdowns, per-variant tables) shown under the main table. */
  sections: string[];
  /** Everything measured, for latest.json. */
  data: unknown;
}
