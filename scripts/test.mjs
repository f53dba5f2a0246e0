#!/usr/bin/env node
/**
 * `npm test`: the build (`npm run build`), the type check and ESLint side by side, and two Jest
 * lanes beside those two once the build is done (the lanes start the built apps). why the build
 * beside the checks: it runs on one core for ~8 s, which the checks use instead of waiting after it.
 *
 * - `serial`: the suites that load both cores or time what they measure (chaos, isolation, the
 *   bench smoke…), one at a time, as they would run alone;
 * - `parallel`: every other suite (mostly waiting on the apps and Redis), three at a time
 *   (TEST_PARALLEL_WORKERS=<n>: n at a time). why three on 2 cores: its suites used 394 CPU-s in
 *   1,296 s of suite time on 2026-11-28, ~0.3 of a core each; alone, the lane took 817 s with two
 *   and 488 s with three, and a clean clone's `npm test` 545 s with three).
 *
 * why lanes, not Jest's workers for everything: two CPU-heavy suites side by side on two cores make
 * each other's timings lie; one heavy suite beside light ones does not. Suites isolate themselves by
 * port and key prefix, and each lane checks at its end that nothing outlived its suites (see
 * test/support/global-teardown.ts). The lanes are listed in jest.config.js.
 *
 * Prints each suite's result as it ends, then the full report of any lane that failed. Extra
 * arguments go to both Jest runs (`npm test -- --ci`).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..');
const jest = join(root, 'node_modules', 'jest', 'bin', 'jest.js');
const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
const eslint = join(root, 'node_modules', 'eslint', 'bin', 'eslint.js');
const logs = mkdtempSync(join(tmpdir(), 'nest-offload-test-lanes-'));
// why one for every step: the tools and the apps both lanes start load the same modules (see test/support/global-setup.ts).
const compileCache = { NODE_COMPILE_CACHE: join(logs, 'node-compile-cache') };
const extra = process.argv.slice(2);
const parallelWorkers = process.env.TEST_PARALLEL_WORKERS ?? '3';
if (!/^[1-9]\d*$/.test(parallelWorkers)) throw new Error(`TEST_PARALLEL_WORKERS must be a whole number of workers, not "${parallelWorkers}"`);
const started = Date.now();
const elapsed = () => `${Math.round((Date.now() - started) / 1000)} s`;

/** Runs one step to its end, its output to a log file; prints the lines `show` picks as they come. */
function step(name, args, env, show = () => false, command = process.execPath) {
  return new Promise((resolve) => {
    const log = join(logs, `${name}.log`);
    const chunks = [];
    const child = spawn(command, args, { cwd: root, env: { ...process.env, ...compileCache, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let pending = '';
    const take = (chunk) => {
      chunks.push(chunk);
      pending += chunk.toString();
      const lines = pending.split('\n');
      pending = lines.pop();
      for (const line of lines) if (show(line)) console.log(`[${name} ${elapsed()}] ${line.trim()}`);
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    child.on('close', (code) => {
      writeFileSync(log, Buffer.concat(chunks));
      resolve({ name, code, log });
    });
  });
}

const suiteLine = (line) => /^(PASS|FAIL) /.test(line.replace(/\x1b\[[0-9;]*m/g, '')) || /^(Tests|Test Suites):/.test(line.replace(/\x1b\[[0-9;]*m/g, ''));
// why npm: the build is what `npm run build` says, whatever a service made of it.
const build = step('build', ['run', 'build'], {}, () => false, process.platform === 'win32' ? 'npm.cmd' : 'npm');
const lanes = build.then(({ code }) =>
  code !== 0
    ? []
    : Promise.all([
        step('serial', [jest, '--runInBand', ...extra], { TEST_LANE: 'serial' }, suiteLine),
        step('parallel', [jest, `--maxWorkers=${parallelWorkers}`, ...extra], { TEST_LANE: 'parallel' }, suiteLine),
      ]),
);
const results = (
  await Promise.all([
    build.then((result) => [result]),
    step('lint', [tsc, '-p', 'tsconfig.json', '--noEmit'], {}).then((result) => [result]),
    step('eslint', [eslint, '--cache', '--cache-location', 'node_modules/.cache/eslint/', 'apps', 'libs', 'test', 'scripts', 'bench'], {}).then((result) => [result]),
    lanes,
  ])
).flat();
let failed = false;
for (const { name, code, log } of results) {
  if (code === 0) continue;
  failed = true;
  console.log(`\n===== ${name} failed (exit ${code}); its output:\n`);
  console.log(readFileSync(log, 'utf8'));
}
rmSync(logs, { recursive: true, force: true });
const lanesRun = results.filter((r) => r.name === 'serial' || r.name === 'parallel').map((r) => `${r.name} lane`);
console.log(`\nnpm test: ${failed ? 'FAILED' : 'passed'} in ${elapsed()} (build, type check, ESLint${lanesRun.length ? `, ${lanesRun.join(', ')}` : '; no lane ran without a build'})`);
process.exit(failed ? 1 : 0);
