import { SpawnSyncReturns } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { CAPABILITIES, type Capability, type CapabilityName, present } from './support/capabilities';
import { removalLeftovers } from './support/removal-leftovers';
import { RepoCopy } from './support/repo-copy';
import { typeChecker } from './support/type-check';

/** Output of a command that must have succeeded; fails with all of it otherwise. */
function ok(result: SpawnSyncReturns<string>): string {
  if (result.status !== 0) throw new Error(`exit ${result.status ?? result.signal}:\n${result.stdout}\n${result.stderr}\n${result.error ?? ''}`);
  return result.stderr;
}

/** Type-checked alone too (the first such check costs a tsc of both apps, each next one a fraction); the others in the removal of all. */
const ALONE: readonly CapabilityName[] = ['webhooks', 'idempotency', 'schedules'];
/** This copy's capabilities: a service that deleted some runs this test on what it kept. */
const KEPT = (Object.keys(CAPABILITIES) as CapabilityName[]).filter((name) => present(name));

/** The development guide's table of capabilities: name, folder, module, its own tests, its guide sections. */
function guideTable(guide: string) {
  const section = guide.slice(guide.indexOf('## Removing a capability'));
  return [...section.matchAll(/^\| ([a-z-]+) \| `([^`]+)` \| `(\w+)` \| (.+?) \| (.+) \|$/gm)].map(([, name, folder, module, tests, sections]) => ({
    name,
    folder,
    module,
    tests: [...tests.matchAll(/`([^`]+)`/g)].map((m) => m[1]),
    sections: [...sections.matchAll(/\]\(([^)]+)\)/g)].map((m) => `docs/${m[1]}`),
  }));
}

/**
 * A capability is removable: on a clean copy, deleting its folder and, in each app module that lists
 * it, its import and the one line of the module list that names it, leaves a build that type-checks;
 * and with all of them gone with `npm run remove:capability` (folders, module lines, their own tests,
 * guide sections and what points at them, the dependencies only they used), nothing in docs/ or
 * package.json points at what went, and the rest of the project (tests and bench included)
 * type-checks and the core passes. The other suites' cases that need a capability skip without it
 * (test/support/capabilities.ts). why the unit specs and jobs.e2e-spec.ts, not the whole suite: they
 * cover what every capability hooks into (the submit path, reads, waits, cancels, event streams,
 * against Redis and the built apps); the whole suite would cost minutes more (docs/development.md
 * says how to run it on such a copy). why one copy: each removal checked alone is type-checked and
 * undone (git checkout in the copy), then all go at once for the one build and test run.
 */
(KEPT.length > 0 ? describe : describe.skip)('removing a capability, on a clean copy', () => {
  let copy: RepoCopy | undefined;
  /** `tsc -p <config> --noEmit` in the copy, each run reusing what the last one loaded and checked (support/type-check.ts). */
  let tsc: (config: string, options?: { report?: string }) => string;
  beforeAll(() => {
    copy = RepoCopy.create('without-capabilities', { project: true });
    tsc = typeChecker(copy.root);
  });
  afterAll(() => copy?.remove());

  const remove = ({ folder, module, wiredIn, tests }: Capability) => {
    for (const path of [folder, ...tests]) rmSync(join(copy!.root, path), { recursive: true });
    for (const file of wiredIn) {
      copy!.edit(file, new RegExp(`^import \\{ ${module} \\} from '[^']+';\\n`, 'm'), '');
      // The entry in the module list: with its import gone, the only line left that names the module.
      copy!.edit(file, new RegExp(`^ +.*\\b${module}\\b.*,\\n`, 'm'), '');
    }
  };

  for (const name of ALONE.filter((n) => KEPT.includes(n))) {
    const capability: Capability = CAPABILITIES[name];
    it(`${capability.folder}: without its folder and its line in ${capability.wiredIn.join(', ')}, the apps type-check`, () => {
      remove(capability);
      try {
        // why in the whole project's program: the check of all removals below then reuses these checks.
        expect(tsc('tsconfig.json', { report: 'tsconfig.build.json' })).toBe('');
      } finally {
        ok(copy!.exec('git', ['checkout', '-q', '--', '.']));
      }
    }, 150_000);
  }

  it(`npm run remove:capability -- ${KEPT.join(' ')}: nothing in docs/ or package.json points at them; the project type-checks, the build, the unit specs, the docs' links and the core's end-to-end tests pass`, () => {
    const removed: Capability[] = KEPT.map((name) => CAPABILITIES[name]);
    const sections = guideTable(copy!.read('docs/development.md')).filter(({ name }) => KEPT.includes(name as CapabilityName)).flatMap((c) => c.sections);
    const removal = copy!.exec('npm', ['run', '--silent', 'remove:capability', '--', ...KEPT]);
    expect([removal.status, removal.stderr]).toEqual([0, '']);
    expect(removal.stdout).toMatch(`remove:capability: removed ${KEPT.join(', ')}:\n`);
    if (KEPT.includes('webhooks')) expect(removal.stdout).toMatch('\n  moved   standardwebhooks to devDependencies: only test/support/webhook-receiver.ts still uses it\n');
    expect(removalLeftovers(copy!)).toEqual([]);
    // Their guide sections are gone, and with them every row that linked there (the README's among them): the docs-links spec below finds no link to one.
    for (const target of sections) {
      const [file, anchor] = target.split('#');
      if (anchor === undefined) {
        expect([target, copy!.exists(file)]).toEqual([target, false]);
        continue;
      }
      expect([target, copy!.read(file).split('\n').some((line) => /^#+ /.test(line) && line.replace(/^#+ /, '').toLowerCase().replace(/[^a-z0-9 -]/g, '').replace(/ /g, '-') === anchor)]).toEqual([target, false]);
    }
    expect(tsc('tsconfig.json')).toBe('');
    ok(copy!.exec('npm', ['run', 'build'], { timeoutMs: 120_000 }));
    const jest = ok(copy!.exec(process.execPath, ['node_modules/jest/bin/jest.js', '--ci', '/(apps|libs)/.*\\.spec\\.ts$', '/test/(jobs|docs-links)\\.e2e-spec\\.ts$'], { timeoutMs: 150_000 }));
    expect(jest).toMatch(/PASS e2e test\/jobs\.e2e-spec\.ts/);
    expect(jest).toMatch(/PASS e2e test\/docs-links\.e2e-spec\.ts/);
    // Gone for real: no source names a module, the build holds nothing of a folder, no spec of one ran.
    const named = copy!.exec('grep', ['-rlwE', removed.map((c) => c.module).join('|'), 'apps', 'libs']);
    expect([named.status, named.stdout]).toEqual([1, '']);
    for (const { folder } of removed) {
      expect(copy!.exists(`dist/${folder}`)).toBe(false);
      expect(jest).not.toMatch(new RegExp(`${folder}/`));
    }
    // No writer left behind: the workers' half of a capability went with it (dead letters: nothing keeps them).
    if (KEPT.includes('dead-letters')) expect(copy!.exec('grep', ['-rlw', 'keepDeadLetter', 'dist/apps']).stdout).toBe('');
    expect(copy!.exists('dist/apps/api/src/api.module.js')).toBe(true);
  }, 300_000);
});

describe('the capabilities, as the development guide lists them', () => {
  it('are the ones test/support/capabilities.ts removes, with the same folders, modules and tests', () => {
    const rows = guideTable(readFileSync(join(__dirname, '..', 'docs', 'development.md'), 'utf8'));
    // why present ones only: remove:capability takes a removed capability's row out of the guide.
    const listed = KEPT.map((name) => ({ name, folder: CAPABILITIES[name].folder, module: CAPABILITIES[name].module, tests: [...CAPABILITIES[name].tests] }));
    expect(rows.map(({ sections: _, ...row }) => row)).toEqual(listed);
  });
});
