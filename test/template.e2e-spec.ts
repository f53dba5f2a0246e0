import { SpawnSyncReturns } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import IORedis from 'ioredis';
import { AppProcess, startApp, stackEnv } from './support/apps';
import { CAPABILITIES, type Capability, type CapabilityName, present } from './support/capabilities';
import { getJob, readEvents, request, submit } from './support/http';
import { removalLeftovers } from './support/removal-leftovers';
import { RepoCopy } from './support/repo-copy';
import { typeChecker } from './support/type-check';

/** Output (stdout unless said) of a command that must have succeeded; fails with all of it otherwise. */
function ok(result: SpawnSyncReturns<string>, stream: 'stdout' | 'stderr' = 'stdout'): string {
  if (result.status !== 0) throw new Error(`exit ${result.status ?? result.signal}:\n${result.stdout}\n${result.stderr}\n${result.error ?? ''}`);
  return result[stream];
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
 * The template's own scripts on a clean copy of the repository, as a team starts a service from it:
 * a capability deleted by hand (its folder, its import and its line in the module list) leaves apps
 * that type-check; then `npm run rename`, `npm run new:job` and `npm run remove:job`, down to
 * removing every example but fibonacci with the README's command, and `npm run remove:capability`
 * for every capability; then the copy builds, passes `npm run lint`, its unit, README, docs and
 * deploy specs and the core jobs end-to-end test, and its apps run the new types under the new name.
 * why one copy for the four scripts: a build, a type check and the copy's specs take 10-40 s each
 * here. The rename changes names, the generator adds files and lines, the removers take some away;
 * none can repair what another breaks, so a failure of any still fails the build or a spec below.
 * why the unit specs and jobs.e2e-spec.ts, not the whole suite: they cover what every capability
 * hooks into (the submit path, reads, waits, cancels, event streams, against Redis and the built
 * apps); the whole suite would cost minutes more (docs/development.md says how to run it on such a copy).
 */
describe('starting a service from the template, on a clean copy', () => {
  const from = (JSON.parse(readFileSync(join(__dirname, '..', 'package.json'), 'utf8')) as { name: string }).name;
  // why assembled: the rename refuses a name the project already contains, and this file is part of it.
  const to = ['acme', 'reports'].join('-');
  const metricPrefix = `${to.replaceAll('-', '_')}_`;
  const oldName = new RegExp(from.split('-').join('[-_ .]?'), 'i');
  const type = 'collatz-record';
  /** A type that takes a file and returns one (`new:job -- <name> --files`). */
  const filesType = 'gzip-document';
  // why assembled: remove:job refuses while code names the type, and this file is part of the copy.
  const reserved = ['ne', 'w'].join('');
  const copy = RepoCopy.create('template', { project: true });
  const env = stackEnv('template');
  const procs: AppProcess[] = [];
  const redis = new IORedis(env.REDIS_URL!);
  /** `tsc -p <config> --noEmit` in the copy, each run reusing what the last one loaded and checked (support/type-check.ts). */
  const tsc = typeChecker(copy.root);

  afterAll(async () => {
    await Promise.all(procs.map((p) => p.stop('SIGKILL')));
    redis.disconnect();
    copy.remove();
    // why: the renamed apps' default blob store (libs/config's blob-target.ts, renamed too), where the --files type's run wrote.
    rmSync(join(tmpdir(), `${to}-blobs`), { recursive: true, force: true });
  });

  /** The copy as it was before new:job added `reserved`, which remove:job must give back. */
  let beforeNew: Map<string, string> | undefined;
  /** The examples the README's "Make it yours" removes, read from it (so this file names none). */
  let examples: string[] = [];
  const script = (file: string, ...args: string[]) => copy.exec(process.execPath, [`scripts/${file}`, ...args], { timeoutMs: 30_000 });
  /** Every file git knows in the copy, by content hash: a refused command must leave it as it was. */
  const snapshot = () => new Map(copy.files().map((file) => [file, createHash('sha256').update(copy.read(file)).digest('hex')]));

  it('refuses invalid service names and the current one, changing nothing', () => {
    const before = snapshot();
    const refusals: Array<[string, RegExp]> = [
      ['Acme', /lowercase words/],
      ['under_score', /lowercase words/],
      ['acme-', /lowercase words/],
      ['acme--reports', /lowercase words/],
      ['acme-2', /lowercase words/],
      ['a'.repeat(57), /at most 56 characters/],
      ['http', /core module/],
      ['jobs', /"jobs" already appears in the project .*pick a more distinctive name/],
      [from, /already named/],
    ];
    for (const [name, message] of refusals) {
      const result = script('rename.mjs', name);
      expect([name, result.status]).toEqual([name, 1]);
      expect(result.stderr).toMatch(message);
    }
    expect(script('rename.mjs').stderr).toMatch(/usage: npm run rename -- <service-name>/);
    expect(snapshot()).toEqual(before);
  });

  const removeByHand = ({ folder, module, wiredIn, tests }: Capability) => {
    for (const path of [folder, ...tests]) rmSync(join(copy.root, path), { recursive: true });
    for (const file of wiredIn) {
      copy.edit(file, new RegExp(`^import \\{ ${module} \\} from '[^']+';\\n`, 'm'), '');
      // The entry in the module list: with its import gone, the only line left that names the module.
      copy.edit(file, new RegExp(`^ +.*\\b${module}\\b.*,\\n`, 'm'), '');
    }
  };

  for (const name of ALONE.filter((n) => KEPT.includes(n))) {
    const capability: Capability = CAPABILITIES[name];
    it(`${capability.folder}: without its folder and its line in ${capability.wiredIn.join(', ')}, the apps type-check`, () => {
      removeByHand(capability);
      try {
        // why in the whole project's program: the type check of `npm run lint` below then reuses these checks.
        expect(tsc('tsconfig.json', { report: 'tsconfig.build.json' })).toBe('');
      } finally {
        // why before the rename: what git has indexed is still the copy as it came.
        ok(copy.exec('git', ['checkout', '-q', '--', '.']));
      }
    }, 150_000);
  }

  it('renames every spelling of the name in one step', () => {
    const output = ok(copy.exec('npm', ['run', '--silent', 'rename', '--', to]));
    const [, files] = new RegExp(`^rename: ${from} → ${to}: \\d+ places in (\\d+) files\\.$`, 'm').exec(output) ?? [];
    expect(output).toMatch(/git commit/);
    const changed = ok(copy.exec('git', ['status', '--porcelain'])).split('\n').filter((line) => line[1] === 'M');
    expect(changed.length).toBe(Number(files));

    const left = copy.files().filter((file) => oldName.test(file) || oldName.test(copy.read(file)));
    expect(left).toEqual([]);
    const lock = JSON.parse(copy.read('package-lock.json'));
    expect([JSON.parse(copy.read('package.json')).name, lock.name, lock.packages[''].name]).toEqual([to, to, to]);
    expect(copy.read('README.md').split('\n')[0]).toBe(`# ${to}`);
    // The README is the service's now: how to rename the template is done, the template's benchmark headline says whose it is.
    expect(output).toMatch(`README.md: dropped its "Name it" section; marked the headline figure as the template's`);
    expect(copy.read('README.md')).not.toMatch(/^### Name it$|every spelling of/m);
    expect(copy.read('README.md')).toMatch(/^\*\*The headline figure of the template this service started from\*\* \(`npm run bench`/m);
    expect(copy.read('libs/config/src/config.ts')).toContain(`.default('${to}')`);
    expect(copy.read('libs/metrics/src/metric-names.ts')).toContain(`'${metricPrefix}'`);
    const k8sNames = copy
      .files()
      .filter((file) => file.endsWith('.yaml'))
      // why part-of: every object is part of the service; `name` may name a component (the dev overlay's redis).
      .flatMap((file) => [...copy.read(file).matchAll(/app\.kubernetes\.io\/part-of: (\S+)/g)].map((m) => m[1]));
    expect(k8sNames.length).toBeGreaterThan(0);
    expect(new Set(k8sNames)).toEqual(new Set([to]));

    // Running it again is refused, and changes nothing.
    const after = snapshot();
    expect(script('rename.mjs', to).stderr).toMatch(`the service is already named "${to}"`);
    expect(snapshot()).toEqual(after);
  });

  it('refuses invalid job names and existing types, and never overwrites a file', () => {
    writeFileSync(join(copy.root, 'libs/jobs/src/stray.job.spec.ts'), '// someone else\'s file\n');
    const before = snapshot();
    for (const name of ['Bad', '1abc', 'under_score', 'a'.repeat(64)]) {
      const result = script('new-job.mjs', name);
      expect([name, result.status]).toEqual([name, 1]);
      expect(result.stderr).toMatch(`"${name}" is not a valid job type name: it must match /^[a-z][a-z0-9-]{0,62}$/`);
    }
    expect(script('new-job.mjs', 'fibonacci').stderr).toMatch('job type "fibonacci" already exists (declared in libs/jobs/src/fibonacci.job.ts)');
    expect(script('new-job.mjs', 'chaos').stderr).toMatch('job type "chaos" already exists (declared in libs/jobs/src/chaos.job.ts)');
    expect(script('new-job.mjs', 'stray').stderr).toMatch('libs/jobs/src/stray.job.spec.ts already exists; nothing was written');
    expect(script('new-job.mjs').stderr).toMatch('usage: npm run new:job -- <name>');
    expect(snapshot()).toEqual(before);
    rmSync(join(copy.root, 'libs/jobs/src/stray.job.spec.ts'));
  });

  it('generates a job type: its file, its unit test, the registry line and its row in docs/job-types.md', () => {
    // The name the README and the guide give the generator's example is this one: its example computes Collatz records.
    for (const doc of ['README.md', 'docs/job-types.md']) expect([doc, /npm run new:job -- (\S+)/.exec(copy.read(doc))?.[1]]).toEqual([doc, type]);
    const output = ok(copy.exec('npm', ['run', '--silent', 'new:job', '--', type]));
    expect(output).toMatch(`added job type "${type}" (export collatzRecord)`);
    expect(output).toMatch(/Next:\n {2}1\. libs\/jobs\/src\/collatz-record\.job\.ts: replace the example/);
    expect(copy.read('libs/jobs/src/registry.ts')).toMatch(/^import \{ collatzRecord \} from '\.\/collatz-record\.job';$/m);
    expect(copy.read('libs/jobs/src/registry.ts')).toMatch(/export const coreJobs = \[[^\]]*, collatzRecord\] as const;/);
    expect(copy.read('docs/job-types.md')).toMatch(/^\| `collatz-record` \| `\{below\}`: integer 2–10\^7\. Generated example/m);
    // With --files, a type that takes a file and returns one.
    const withFiles = ok(copy.exec('npm', ['run', '--silent', 'new:job', '--', filesType, '--files']));
    expect(withFiles).toMatch(`added job type "${filesType}" (export gzipDocument)`);
    expect(withFiles).toMatch(`created libs/jobs/src/${filesType}.job.ts   the declaration, with a runnable example that takes a file and returns one`);
    expect(copy.read(`libs/jobs/src/${filesType}.job.ts`)).toMatch(/files: \{ document: \{ maxBytes: MAX_BYTES, accept: \['application\/pdf'\] \} \},\n {2}returnsFiles: true,/);
    expect(copy.read('docs/job-types.md')).toMatch(/^\| `gzip-document` \| `\{level\?\}`: gzip level 1–9 \(6\); and the file `document`/m);
    beforeNew = snapshot();
    // A reserved word makes a valid identifier too.
    expect(ok(copy.exec('npm', ['run', '--silent', 'new:job', '--', reserved]))).toMatch(`added job type "${reserved}" (export ${reserved}Job)`);

    const generated = copy.read(`libs/jobs/src/${type}.job.ts`);
    expect(script('new-job.mjs', type).stderr).toMatch(`job type "${type}" already exists (declared in libs/jobs/src/${type}.job.ts)`);
    expect(copy.read(`libs/jobs/src/${type}.job.ts`)).toBe(generated);
  });

  it('refuses to remove a type other code still uses, naming file and line, and changes nothing', () => {
    // Someone's code that uses collatz-record: by its name, by its API path, by its file, and once only in a comment.
    const user = 'apps/api/src/collatz-client.ts';
    writeFileSync(
      join(copy.root, user),
      [
        '// Asks for a collatz-record (the comment names `collatz-record` too: not a use).',
        `export const TYPE = '${type}';`,
        `export const path = (base: string) => \`\${base}/v1/jobs/${type}\`;`,
        `export { longestChain } from '../../../libs/jobs/src/${type}.job';`,
        '',
      ].join('\n'),
    );
    const before = snapshot();
    const refused = script('remove-job.mjs', type);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toMatch(`refusing: other code still uses "${type}"; nothing was changed.`);
    expect(refused.stderr).toMatch(`\n  ${user}:2  export const TYPE = '${type}';\n  ${user}:3  export const path`);
    expect(refused.stderr).toMatch(`\n  ${user}:4  export { longestChain } from`);
    expect(refused.stderr).not.toMatch(`${user}:1`);
    expect(script('remove-job.mjs', 'nope').stderr).toMatch(`no job type "nope": no file in libs/jobs/src declares name: 'nope'`);
    expect(script('remove-job.mjs').stderr).toMatch('usage: npm run remove:job -- <name>');
    expect(snapshot()).toEqual(before);
    rmSync(join(copy.root, user));
  });

  it('removes a type with its own tests and its rows in the docs, giving back the tree new:job had changed', () => {
    // An end-to-end test of its own, and a guide that names it among others.
    writeFileSync(join(copy.root, `test/${reserved}.e2e-spec.ts`), `it('submits ${reserved}', () => expect(1).toBe(1));\n`);
    const guide = 'docs/removal-check.md';
    const kept = ['| Type | What |', '| --- | --- |', `| \`${type}\` | stays |`, '', '- `other`: stays', '', `Prose that names \`${reserved}\` stays.`, ''];
    const items = [`- \`${reserved}\`: an item`, '  of two lines'];
    writeFileSync(join(copy.root, guide), [...kept.slice(0, 2), `| \`${reserved}\` | its row |`, ...kept.slice(2, 4), ...items, ...kept.slice(4)].join('\n'));

    const output = ok(copy.exec('npm', ['run', '--silent', 'remove:job', '--', reserved]));
    expect(output).toMatch(`remove:job: removed job type "${reserved}":\n`);
    for (const file of [`libs/jobs/src/${reserved}.job.ts`, `libs/jobs/src/${reserved}.job.spec.ts`, `test/${reserved}.e2e-spec.ts`]) {
      expect(output).toMatch(`removed ${file}\n`);
    }
    expect(output).toMatch(`\n  edited  ${guide}   removed lines 3, 6, 7\n`);
    expect(output).toMatch(/Still named in comments or prose \(not a use; edit as you see fit\):\n/);
    expect(output).toMatch(`\n  ${guide}:7\n`);
    expect(copy.read(guide)).toBe(kept.join('\n'));
    rmSync(join(copy.root, guide));
    expect(snapshot()).toEqual(beforeNew);
  });

  it('removes every example but fibonacci with the README\'s command: no other code needs them', () => {
    const beforeRemoval = new Map(['docs/benchmarks.md', 'package.json'].filter((file) => copy.exists(file)).map((file) => [file, copy.read(file)]));
    const command = /^npm run remove:job -- ([a-z0-9 -]+?) +# every example but fibonacci$/m.exec(copy.read('README.md'));
    examples = command?.[1].split(' ') ?? [];
    expect(examples.length).toBeGreaterThan(0);
    // why a filter: in a service that already ran that command (its suite still runs this test) the
    // examples are gone, and only the end state below is left to check.
    const present = examples.filter((name) => copy.exists(`libs/jobs/src/${name}.job.ts`));
    if (present.length > 0) {
      const output = ok(copy.exec('npm', ['run', '--silent', 'remove:job', '--', ...present]));
      expect(output).toMatch(`remove:job: removed job types ${present.map((name) => `"${name}"`).join(', ')}:\n`);
      // It says when it takes measured results out of docs/benchmarks.md, and which packages went with the types.
      if (present.some((name) => new RegExp(`^\\| \`${name}\``, 'm').test(beforeRemoval.get('docs/benchmarks.md') ?? ''))) {
        expect(output).toMatch(/\n {2}edited {2}docs\/benchmarks\.md {3}removed lines [\d, ]+: measured results, .*npm run bench/);
      }
      // why assembled: a file that names the package (or the type) in quotes uses it, and this one would keep it.
      const renderer = ['markdown-', 'it'].join('');
      if (renderer in (JSON.parse(beforeRemoval.get('package.json')!) as { dependencies: object }).dependencies) {
        expect(output).toMatch(`\n  removed ${renderer} from package.json: nothing left uses it\n`);
      }
      expect(output).not.toMatch('Docs that still cite a removed file');
    }
    // Nothing in docs/ or package.json points at what went.
    expect(removalLeftovers(copy)).toEqual([]);
    for (const name of examples) expect([name, copy.exists(`libs/jobs/src/${name}.job.ts`)]).toEqual([name, false]);
    // Every shipped type left is fibonacci or one new:job added.
    expect(copy.read('libs/jobs/src/registry.ts')).toMatch(/^export const coreJobs = \[fibonacci, collatzRecord, gzipDocument\] as const;$/m);
  });

  // why skipped without any: a service that removed every capability has nothing left to remove.
  (KEPT.length > 0 ? it : it.skip)(`npm run remove:capability -- ${KEPT.join(' ')}: nothing in README.md, docs/ or package.json points at them`, () => {
    const sections = guideTable(copy.read('docs/development.md')).filter(({ name }) => KEPT.includes(name as CapabilityName)).flatMap((c) => c.sections);
    const removal = copy.exec('npm', ['run', '--silent', 'remove:capability', '--', ...KEPT]);
    expect([removal.status, removal.stderr]).toEqual([0, '']);
    expect(removal.stdout).toMatch(`remove:capability: removed ${KEPT.join(', ')}:\n`);
    if (KEPT.includes('webhooks')) expect(removal.stdout).toMatch('\n  moved   standardwebhooks to devDependencies: only test/support/webhook-receiver.ts still uses it\n');
    // A package the apps still name only in `import type` is needed to build them, not to run them.
    if (KEPT.includes('docs')) expect(removal.stdout).toMatch(/\n {2}moved {3}@nestjs\/swagger to devDependencies: only .*apps\/api\/src\/http\/openapi\.recorder\.ts \(its types\)/);
    expect(removalLeftovers(copy)).toEqual([]);
    // Their guide sections are gone, and with them every row that linked there (the README's among them): the docs-links spec below finds no link to one.
    for (const target of sections) {
      const [file, anchor] = target.split('#');
      if (anchor === undefined) {
        expect([target, copy.exists(file)]).toEqual([target, false]);
        continue;
      }
      expect([target, copy.read(file).split('\n').some((line) => /^#+ /.test(line) && line.replace(/^#+ /, '').toLowerCase().replace(/[^a-z0-9 -]/g, '').replace(/ /g, '-') === anchor)]).toEqual([target, false]);
    }
  });

  it('builds, passes npm run lint, its unit tests, the README, docs and deploy specs and the jobs end-to-end test with no other edit', () => {
    const took: string[] = [];
    const timed = <T>(what: string, result: () => T) => {
      const started = Date.now();
      const ended = result();
      took.push(`${what} ${((Date.now() - started) / 1000).toFixed(1)} s`);
      return ended;
    };
    timed('npm run build', () => ok(copy.exec('npm', ['run', 'build'], { timeoutMs: 240_000 })));
    // `npm run lint` as the copy's package.json says it, its type check run in this process: it
    // reuses the program of the checks above instead of loading every typing again (the step took
    // 14 s here against 19 s as `npm run lint`).
    const [typeCheck, ...rest] = (JSON.parse(copy.read('package.json')) as { scripts: { lint: string } }).scripts.lint.split(' && ');
    expect(typeCheck).toBe('tsc -p tsconfig.json --noEmit');
    timed('npm run lint', () => {
      expect(tsc('tsconfig.json')).toBe('');
      ok(copy.exec('sh', ['-c', rest.join(' && ')], { env: { PATH: `${join(copy.root, 'node_modules', '.bin')}:${process.env.PATH}` }, timeoutMs: 240_000 }));
    });
    const jest = timed('unit, README, docs, deploy and jobs specs', () =>
      ok(
        copy.exec(
          process.execPath,
          ['node_modules/jest/bin/jest.js', '--ci', '/(apps|libs)/.*\\.spec\\.ts$', '/test/(readme|docs-links|deploy|jobs)\\.e2e-spec\\.ts$'],
          { env: { REDIS_URL: env.REDIS_URL }, timeoutMs: 240_000 },
        ),
        'stderr',
      ),
    );
    console.log(`[template] after rename, new:job, remove:job and remove:capability, in the copy: ${took.join(', ')}`);
    expect(jest).toMatch(/PASS unit libs\/jobs\/src\/collatz-record\.job\.spec\.ts/);
    expect(jest).toMatch(/PASS unit libs\/jobs\/src\/gzip-document\.job\.spec\.ts/);
    expect(jest).toMatch(/PASS unit libs\/jobs\/src\/fibonacci\.job\.spec\.ts/);
    for (const spec of ['readme', 'docs-links', 'deploy', 'jobs']) expect(jest).toMatch(`PASS e2e test/${spec}.e2e-spec.ts`);
    // The capabilities are gone for real: no source names a module, the build holds nothing of a folder, no spec of one ran.
    const removed = KEPT.map((name) => CAPABILITIES[name]);
    if (removed.length > 0) {
      const named = copy.exec('grep', ['-rlwE', removed.map((c) => c.module).join('|'), 'apps', 'libs']);
      expect([named.status, named.stdout]).toEqual([1, '']);
    }
    for (const { folder } of removed) {
      expect(copy.exists(`dist/${folder}`)).toBe(false);
      expect(jest).not.toMatch(new RegExp(`${folder}/`));
    }
    // No writer left behind: the workers' half of a capability went with it (dead letters: nothing keeps them).
    if (KEPT.includes('dead-letters')) expect(copy.exec('grep', ['-rlw', 'keepDeadLetter', 'dist/apps']).stdout).toBe('');
    expect(copy.exists('dist/apps/api/src/api.module.js')).toBe(true);
  }, 600_000);

  it('runs the new type end to end, under the new name', async () => {
    const [api, worker] = await Promise.all([startApp('api', env, { root: copy.root }), startApp('worker', env, { root: copy.root })]);
    procs.push(api, worker);

    const { body: types } = await request<Array<{ type: string; queue: string; inputSchema: unknown }>>(`${api.url}/v1/job-types`);
    for (const name of examples) expect(types.map((t) => t.type)).not.toContain(name);
    expect(types.find((t) => t.type === type)).toMatchObject({
      queue: 'default',
      inputSchema: { type: 'object', properties: { below: { type: 'integer', minimum: 2, maximum: 10_000_000 } }, required: ['below'] },
    });

    for (const input of [{ below: 1 }, { below: 10, extra: true }, { below: '10' }]) {
      const res = await submit(api.url, type, input);
      expect([input, res.status, res.body.code]).toEqual([input, 400, 'INVALID_INPUT']);
    }

    const accepted = await submit(api.url, type, { below: 500_000 });
    expect(accepted.status).toBe(202);
    const events = await readEvents(`${api.url}/v1/jobs/${accepted.body.id}/events`, 60_000);
    const progress = events.filter((e) => e.event === 'progress').map((e) => e.data.progress as number);
    expect(progress.some((p) => p > 0 && p < 100)).toBe(true);
    expect(progress).toEqual([...progress].sort((a, b) => a - b));
    expect(events.at(-1)).toMatchObject({ event: 'completed', data: { status: 'completed', result: { start: 410_011, steps: 448 } } });
    expect((await getJob(api.url, accepted.body.id)).body).toMatchObject({ status: 'completed', progress: 100 });
    expect((await submit(api.url, reserved, { below: 10 })).body).toMatchObject({ status: 404, code: 'UNKNOWN_JOB_TYPE' });
    expect(await worker.metric(`${metricPrefix}jobs_finished_total`, { type, outcome: 'completed' })).toBe(1);

    // The generated type that takes a file: a PDF in, the PDF gzipped out, through the blob store (a directory by default).
    const pdf = Buffer.from(`%PDF-1.4\n${'a line of the document\n'.repeat(2000)}`);
    const form = new FormData();
    form.set('input', JSON.stringify({ level: 9 }));
    form.set('document', new Blob([new Uint8Array(pdf)], { type: 'application/pdf' }), 'document.pdf');
    const gzipped = await request(`${api.url}/v1/jobs/${filesType}`, { method: 'POST', body: form, headers: { prefer: 'wait=30' } });
    expect([gzipped.status, gzipped.body.status, gzipped.body.result?.bytes]).toEqual([200, 'completed', pdf.length]);
    const [file] = gzipped.body.files as Array<{ name: string; url: string; bytes: number }>;
    const download = Buffer.from(await (await fetch(`${api.url}${file.url}`)).arrayBuffer());
    expect([file.name, download.length, gunzipSync(download).equals(pdf)]).toEqual(['document.pdf.gz', gzipped.body.result.gzipBytes, true]);

    for (const app of [api, worker]) {
      const samples = (await (await fetch(`${app.url}/metrics`)).text()).split('\n').filter((line) => line && !line.startsWith('#'));
      expect(samples.length).toBeGreaterThan(10);
      expect(samples.filter((line) => !line.startsWith(metricPrefix))).toEqual([]);
    }
    const clients = (await redis.client('LIST')) as string;
    expect(clients).toMatch(`name=${to}:api `);
    expect(clients).toMatch(`name=${to}:worker `);
  });
});

describe('the capabilities, as the development guide lists them', () => {
  it('are the ones test/support/capabilities.ts removes, with the same folders, modules and tests', () => {
    const rows = guideTable(readFileSync(join(__dirname, '..', 'docs', 'development.md'), 'utf8'));
    // why present ones only: remove:capability takes a removed capability's row out of the guide.
    const listed = KEPT.map((name) => ({ name, folder: CAPABILITIES[name].folder, module: CAPABILITIES[name].module, tests: [...CAPABILITIES[name].tests] }));
    expect(rows.map(({ sections: _, ...row }) => row)).toEqual(listed);
  });
});
