#!/usr/bin/env node
/**
 * Sums a TEST_CPU_LOG file (see test/support/cpu-log.ts): `TEST_CPU_LOG=/tmp/cpu.jsonl npx jest …`,
 * then `node scripts/cpu-log.mjs /tmp/cpu.jsonl`. One line per suite, costliest first: its CPU-s (its
 * Jest process's own + its children's), its wall time, and the apps it started with what they cost
 * to start; then the totals.
 */
import { readFileSync } from 'node:fs';

const file = process.argv[2];
if (!file) throw new Error('usage: node scripts/cpu-log.mjs <TEST_CPU_LOG file>');
const suites = new Map();
const suite = (name) => suites.get(name) ?? suites.set(name, { self: 0, children: 0, wall: 0, apps: { api: [], worker: [] } }).get(name);
for (const line of readFileSync(file, 'utf8').split('\n')) {
  if (!line) continue;
  const r = JSON.parse(line);
  if (r.kind === 'suite') Object.assign(suite(r.suite), { self: r.selfCpu, children: r.childrenCpu, wall: r.wallS });
  else suite(r.suite ?? '?').apps[r.kind].push(r.readyCpu);
}
const fmt = (n, w = 7) => n.toFixed(1).padStart(w);
const starts = (list) => {
  const known = list.filter((c) => c !== undefined);
  const mean = known.length ? known.reduce((a, b) => a + b, 0) / known.length : 0;
  return `${String(list.length).padStart(3)} × ${known.length ? mean.toFixed(2) : '   -'}`;
};
console.log(`${'suite'.padEnd(44)}   CPU-s  (self  children)   wall s   api starts × CPU-s  worker starts × CPU-s`);
const rows = [...suites].sort(([, a], [, b]) => b.self + b.children - (a.self + a.children));
const total = { cpu: 0, self: 0, wall: 0, api: [], worker: [] };
for (const [name, s] of rows) {
  console.log(`${name.padEnd(44)} ${fmt(s.self + s.children)}  ${fmt(s.self, 6)} ${fmt(s.children)}  ${fmt(s.wall)}   ${starts(s.apps.api).padStart(18)}  ${starts(s.apps.worker).padStart(21)}`);
  total.cpu += s.self + s.children;
  total.self += s.self;
  total.wall += s.wall;
  total.api.push(...s.apps.api);
  total.worker.push(...s.apps.worker);
}
const startCpu = [...total.api, ...total.worker].reduce((a, b) => a + (b ?? 0), 0);
console.log(`\n${rows.length} suites: ${total.cpu.toFixed(0)} CPU-s (Jest processes ${total.self.toFixed(0)}), ${total.wall.toFixed(0)} s of suite wall time;`);
console.log(`apps: ${starts(total.api)} API starts, ${starts(total.worker)} worker starts: ${startCpu.toFixed(0)} CPU-s to start`);
