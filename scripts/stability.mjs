#!/usr/bin/env node
/**
 * Runs a set of test suites again and again, as a clean clone's CI would (a fresh Jest cache each
 * time, so the order is the one `npm test` uses there), and stops at the first failure, keeping its
 * log. Proof that a flaky suite is fixed, not that it passed once.
 *
 *   npm run test:stability                       # the chaos suites (test/chaos), 10 runs
 *   npm run test:stability -- 3 test/chaos/redis-late.e2e-spec.ts
 *
 * Build first (`npm run build`): the suites run the built apps.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const [runsArg, ...patterns] = process.argv.slice(2);
const runs = Number(runsArg ?? 10);
if (!Number.isInteger(runs) || runs < 1) {
  console.error('usage: npm run test:stability -- [runs (default 10)] [test path patterns (default test/chaos)]');
  process.exit(2);
}
const selected = patterns.length > 0 ? patterns : ['test/chaos'];
const jest = join(import.meta.dirname, '..', 'node_modules', 'jest', 'bin', 'jest.js');
const results = [];
for (let run = 1; run <= runs; run++) {
  const cache = mkdtempSync(join(tmpdir(), 'nest-offload-stability-'));
  const started = Date.now();
  const result = spawnSync(process.execPath, [jest, '--ci', '--cacheDirectory', cache, ...selected], { encoding: 'utf8', env: { ...process.env, CI: 'true' } });
  rmSync(cache, { recursive: true, force: true });
  const seconds = Math.round((Date.now() - started) / 100) / 10;
  const ok = result.status === 0;
  const suites = /Test Suites:.*$/m.exec(result.stderr)?.[0] ?? 'no summary';
  results.push({ run, ok, seconds });
  console.log(`run ${run}/${runs}: ${ok ? 'passed' : 'FAILED'} in ${seconds} s (${suites})`);
  if (!ok) {
    const log = join(tmpdir(), `nest-offload-stability-run-${run}.log`);
    writeFileSync(log, `${result.stdout}\n${result.stderr}`);
    console.log(`  its output: ${log}`);
    break;
  }
}
const passed = results.filter((r) => r.ok).length;
console.log(`${passed} of ${results.length} runs passed${results.length < runs ? ` (stopped at the first failure; ${runs} asked)` : ''}; times ${results.map((r) => r.seconds).join(', ')} s`);
process.exit(passed === runs ? 0 : 1);
