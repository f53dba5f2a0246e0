import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

const ROOT = join(__dirname, '..');

/** A bad setting stops the process at start-up with a message naming the variable. */
describe('start-up configuration', () => {
  it.each([
    ['api', { PORT: 'eighty' }, 'PORT'],
    ['api', { REDIS_URL: 'http://nope' }, 'REDIS_URL'],
    ['worker', { WORKER_THREADS: '0' }, 'WORKER_THREADS'],
    ['worker', { NODE_ENV: 'production', CHAOS_JOBS: 'true' }, 'CHAOS_JOBS'],
  ])('%s refuses %j', (app, env, name) => {
    const result = spawnSync(process.execPath, [`dist/apps/${app}/src/main.js`], {
      cwd: ROOT,
      env: { PATH: process.env.PATH, ...env },
      encoding: 'utf8',
      timeout: 15_000,
    });
    expect(result.status).toBe(1);
    expect(result.stderr).toContain(`${name}: `);
    expect(result.stderr).not.toMatch(/\n\s+at /); // a message for the operator, not a stack trace
  });
});
