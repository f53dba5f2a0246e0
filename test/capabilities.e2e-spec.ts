import { SpawnSyncReturns } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { RepoCopy } from './support/repo-copy';

/** Output of a command that must have succeeded; fails with all of it otherwise. */
function ok(result: SpawnSyncReturns<string>): string {
  if (result.status !== 0) throw new Error(`exit ${result.status ?? result.signal}:\n${result.stdout}\n${result.stderr}\n${result.error ?? ''}`);
  return result.stderr;
}

/** Optional capabilities of the API: a folder of apps/api/src and the module api.module.ts imports from it. */
const CAPABILITIES = [
  { folder: 'webhooks', module: 'WebhooksModule' },
  { folder: 'idempotency', module: 'IdempotencyModule' },
  { folder: 'schedules', module: 'SchedulesModule' },
] as const;

const tsc = join(__dirname, '..', 'node_modules', 'typescript', 'bin', 'tsc');

/**
 * A capability is removable: on a clean copy, deleting its folder and its module's line in
 * api.module.ts (the import and its entry in the module list) leaves a build that type-checks; and
 * with all of them gone, the core still passes. why the unit specs and jobs.e2e-spec.ts, not the
 * whole suite: they cover what every capability hooks into (the submit path, reads, waits, cancels,
 * event streams, against Redis and the built apps); the whole suite would cost many minutes. why one
 * copy: each removal alone is type-checked and undone (git checkout in the copy), then all go at once
 * for the one build and test run.
 */
describe('removing a capability of the API, on a clean copy', () => {
  let copy: RepoCopy | undefined;
  beforeAll(() => {
    copy = RepoCopy.create('without-capabilities', { project: true });
  });
  afterAll(() => copy?.remove());

  const remove = ({ folder, module }: (typeof CAPABILITIES)[number]) => {
    rmSync(join(copy!.root, 'apps/api/src', folder), { recursive: true });
    copy!.edit('apps/api/src/api.module.ts', new RegExp(`^import \\{ ${module} \\} from '\\./${folder}/${folder}\\.module';\\n`, 'm'), '');
    copy!.edit('apps/api/src/api.module.ts', `        ${module},\n`, '');
  };

  for (const capability of CAPABILITIES) {
    it(`${capability.folder}: without its folder and its line in api.module.ts, the apps type-check`, () => {
      remove(capability);
      try {
        ok(copy!.exec(process.execPath, [tsc, '-p', 'tsconfig.build.json', '--noEmit'], { timeoutMs: 120_000 }));
      } finally {
        ok(copy!.exec('git', ['checkout', '-q', '--', '.']));
      }
    }, 150_000);
  }

  it(`without ${CAPABILITIES.map((c) => c.folder).join(', ')}: the build, the unit specs and the core's end-to-end tests pass`, () => {
    for (const capability of CAPABILITIES) remove(capability);
    ok(copy!.exec('npm', ['run', 'build'], { timeoutMs: 120_000 }));
    const jest = ok(copy!.exec(process.execPath, ['node_modules/jest/bin/jest.js', '--ci', '/(apps|libs)/.*\\.spec\\.ts$', '/test/jobs\\.e2e-spec\\.ts$'], { timeoutMs: 150_000 }));
    expect(jest).toMatch(/PASS e2e test\/jobs\.e2e-spec\.ts/);
    for (const { folder } of CAPABILITIES) expect(jest).not.toMatch(new RegExp(`apps/api/src/${folder}/`));
  }, 300_000);
});
