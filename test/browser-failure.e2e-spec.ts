import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { present } from './support/capabilities';

const ROOT = join(__dirname, '..');

/** Pids of the live processes in process group `pgid` (from /proc; Linux only, like the rest of the suite). */
function processGroup(pgid: number): number[] {
  const members: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // `pid (comm) state ppid pgrp …`; comm may hold spaces and parentheses.
      const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(pgrp) === pgid && state !== 'Z') members.push(Number(entry));
    } catch {
      // it exited while we looked
    }
  }
  return members;
}

/**
 * A browser test whose Chromium cannot start fails cleanly: Jest (run here as a child, in a process
 * group of its own) reports the cause, stops the apps it started beside the browser and exits. The
 * browser test is pages.e2e-spec.ts, which needs the API docs or the queue dashboard.
 */
(present('docs') || present('queue-dashboard') ? describe : describe.skip)('a browser that cannot start', () => {
  it.each([
    ['a file that is not executable', join(ROOT, 'package.json'), /CHROMIUM_PATH=.*package\.json is not an executable file/],
    ['a program that is not a browser', '/bin/false', /browserType\.launch/],
  ])('CHROMIUM_PATH at %s fails the test, leaves no process and lets Jest exit', async (_what, path, cause) => {
    const jest = spawn(process.execPath, [join(ROOT, 'node_modules', 'jest', 'bin', 'jest.js'), '--selectProjects', 'e2e', '--runTestsByPath', 'test/pages.e2e-spec.ts'], {
      cwd: ROOT,
      env: { ...process.env, CHROMIUM_PATH: path, REDIS_URL: process.env.E2E_REDIS_URL, UPDATE_SCREENSHOTS: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let output = '';
    jest.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    jest.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const bound = setTimeout(() => process.kill(-jest.pid!, 'SIGKILL'), 150_000);
    const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => jest.once('close', (c, s) => resolve([c, s])));
    clearTimeout(bound);
    const left = processGroup(jest.pid!);
    if (left.length > 0) process.kill(-jest.pid!, 'SIGKILL');
    expect({ code, signal, left }).toEqual({ code: 1, signal: null, left: [] });
    expect(output).toMatch(cause);
    // Every case it has fails (a case for a capability this service deleted is skipped).
    expect(output).toMatch(/Tests:\s+(\d+) failed, (\d+ skipped, )?\d+ total/);
    expect(output).not.toMatch(/Tests:.*passed/);
    expect(output).not.toMatch(/did not exit/);
  }, 180_000);
});
