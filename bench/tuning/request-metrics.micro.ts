import { Counter, Histogram, Registry } from 'prom-client';
import { BoundCounter, BoundHistogram } from '../../libs/metrics/src/bound-metrics';

/**
 * CPU time per update of a request-path metric: prom-client's labelled child (validates and hashes
 * its labels each time) against a bound series (libs/metrics/src/bound-metrics.ts).
 *   npx tsc -p bench/tsconfig.json && npx node bench/.build/bench/tuning/request-metrics.micro.js
 */
function nsPerCall(fn: () => void, calls = 2_000_000): number {
  for (let i = 0; i < 100_000; i++) fn();
  const before = process.cpuUsage();
  for (let i = 0; i < calls; i++) fn();
  const used = process.cpuUsage(before);
  return ((used.user + used.system) * 1000) / calls;
}

const registry = new Registry();
const buckets = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const labels = { route: '/v1/jobs/:type', method: 'POST', status: '200' };
const histogram = new Histogram({ name: 'h_seconds', help: 'h', labelNames: ['route', 'method', 'status'], buckets, registers: [registry] }).labels(labels);
const counter = new Counter({ name: 'c_total', help: 'c', labelNames: ['type', 'outcome'], registers: [registry] }).labels({ type: 'fibonacci', outcome: 'cached' });
const boundHistogram = new BoundHistogram({ name: 'bh_seconds', help: 'h', labelNames: ['route', 'method', 'status'], buckets, registers: [registry] }).bind(labels);
const boundCounter = new BoundCounter({ name: 'bc_total', help: 'c', labelNames: ['type', 'outcome'], registers: [registry] }).bind({ type: 'fibonacci', outcome: 'cached' });

const rows: Array<[string, () => void]> = [
  ['histogram observe, prom-client child', () => histogram.observe(0.0009)],
  ['histogram observe, bound series', () => boundHistogram.observe(0.0009)],
  ['counter inc, prom-client child', () => counter.inc()],
  ['counter inc, bound series', () => boundCounter.inc()],
];
for (const [name, fn] of rows) console.log(`${name.padEnd(40)} ${nsPerCall(fn).toFixed(0).padStart(6)} ns`);
