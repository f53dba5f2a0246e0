import { SpawnSyncReturns } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { RepoCopy } from './support/repo-copy';

/** Output of a command that must have succeeded; fails with all of it otherwise. */
function ok(result: SpawnSyncReturns<string>): string {
  if (result.status !== 0) throw new Error(`exit ${result.status ?? result.signal}:\n${result.stdout}\n${result.stderr}\n${result.error ?? ''}`);
  return result.stderr;
}

const API = 'apps/api/src/api.module.ts';
const WORKER = 'apps/worker/src/worker.module.ts';

interface Capability {
  /** Its folder, from the repository's root. */
  folder: string;
  /** The Nest module the apps import from it. */
  module: string;
  /** The app modules that list it. */
  wiredIn: readonly string[];
  /** Type-checked alone too (each such run costs a tsc of both apps). */
  alone?: true;
}

/** The optional capabilities: each a folder with one Nest module, listed by one line per app. */
const CAPABILITIES: readonly Capability[] = [
  { folder: 'apps/api/src/webhooks', module: 'WebhooksModule', wiredIn: [API], alone: true },
  { folder: 'apps/api/src/idempotency', module: 'IdempotencyModule', wiredIn: [API], alone: true },
  { folder: 'apps/api/src/schedules', module: 'SchedulesModule', wiredIn: [API], alone: true },
  { folder: 'apps/api/src/batch', module: 'BatchModule', wiredIn: [API] },
  { folder: 'apps/api/src/demo', module: 'DemoModule', wiredIn: [API] },
  { folder: 'apps/api/src/docs', module: 'ApiDocsModule', wiredIn: [API] },
  { folder: 'apps/api/src/queue-dashboard', module: 'QueueDashboardModule', wiredIn: [API] },
  { folder: 'libs/otel', module: 'OtelTracingModule', wiredIn: [API, WORKER] },
];

const tsc = join(__dirname, '..', 'node_modules', 'typescript', 'bin', 'tsc');

/**
 * A capability is removable: on a clean copy, deleting its folder and, in each app module that lists
 * it, its import and the one line of the module list that names it, leaves a build that type-checks;
 * and with all of them gone, the core still passes. why the unit specs and jobs.e2e-spec.ts, not the
 * whole suite: they cover what every capability hooks into (the submit path, reads, waits, cancels,
 * event streams, against Redis and the built apps); the whole suite would cost many minutes. why one
 * copy: each removal checked alone is type-checked and undone (git checkout in the copy), then all
 * go at once for the one build and test run. why only some alone: each costs a type check of both
 * apps (4–12 s); the others are checked in the removal of all.
 */
describe('removing a capability, on a clean copy', () => {
  let copy: RepoCopy | undefined;
  beforeAll(() => {
    copy = RepoCopy.create('without-capabilities', { project: true });
  });
  afterAll(() => copy?.remove());

  const remove = ({ folder, module, wiredIn }: Capability) => {
    rmSync(join(copy!.root, folder), { recursive: true });
    for (const file of wiredIn) {
      copy!.edit(file, new RegExp(`^import \\{ ${module} \\} from '[^']+';\\n`, 'm'), '');
      // The entry in the module list: with its import gone, the only line left that names the module.
      copy!.edit(file, new RegExp(`^ +.*\\b${module}\\b.*,\\n`, 'm'), '');
    }
  };

  for (const capability of CAPABILITIES.filter((c) => c.alone)) {
    it(`${capability.folder}: without its folder and its line in ${capability.wiredIn.join(', ')}, the apps type-check`, () => {
      remove(capability);
      try {
        ok(copy!.exec(process.execPath, [tsc, '-p', 'tsconfig.build.json', '--noEmit'], { timeoutMs: 120_000 }));
      } finally {
        ok(copy!.exec('git', ['checkout', '-q', '--', '.']));
      }
    }, 150_000);
  }

  it(`without ${CAPABILITIES.map((c) => c.module).join(', ')}: the build, the unit specs and the core's end-to-end tests pass`, () => {
    for (const capability of CAPABILITIES) remove(capability);
    ok(copy!.exec('npm', ['run', 'build'], { timeoutMs: 120_000 }));
    const jest = ok(copy!.exec(process.execPath, ['node_modules/jest/bin/jest.js', '--ci', '/(apps|libs)/.*\\.spec\\.ts$', '/test/jobs\\.e2e-spec\\.ts$'], { timeoutMs: 150_000 }));
    expect(jest).toMatch(/PASS e2e test\/jobs\.e2e-spec\.ts/);
    // Gone for real: no source names a module, the build holds nothing of a folder, no spec of one ran.
    const named = copy!.exec('grep', ['-rlwE', CAPABILITIES.map((c) => c.module).join('|'), 'apps', 'libs']);
    expect([named.status, named.stdout]).toEqual([1, '']);
    for (const { folder } of CAPABILITIES) {
      expect(copy!.exists(`dist/${folder}`)).toBe(false);
      expect(jest).not.toMatch(new RegExp(`${folder}/`));
    }
    expect(copy!.exists('dist/apps/api/src/api.module.js')).toBe(true);
  }, 300_000);
});
