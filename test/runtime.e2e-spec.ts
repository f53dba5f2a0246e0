import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { AppProcess, stackEnv, startStack } from './support/apps';

/**
 * One runtime from laptop to image: `npm ci` installs Node (the `node` dev dependency) into
 * node_modules/.bin, which npm puts first on PATH for every script, so `npm test`, `npm start` and
 * `npm run bench` run on it whatever Node runs npm itself. This fails when that chain breaks
 * (e.g. `npm ci --ignore-scripts`, or Jest started with another `node`), or when package.json and
 * the image disagree on the major.
 */

const ROOT = join(__dirname, '..');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  engines: { node: string };
  devDependencies: Record<string, string>;
};

/** The one major package.json supports: `engines.node` is `^N`. */
function supportedMajor(): number {
  const match = /^\^(\d+)$/.exec(pkg.engines.node);
  if (!match) throw new Error(`package.json engines.node is "${pkg.engines.node}"; expected one major, like "^26"`);
  return Number(match[1]);
}

const major = (version: string) => Number(/^v?(\d+)\./.exec(version)?.[1]);

describe('one Node runtime', () => {
  const supported = supportedMajor();

  it('package.json installs the Node major its engines name, and the image is built on the same one', () => {
    expect(major(pkg.devDependencies.node.replace(/^[\^~]/, ''))).toBe(supported);
    const bases = readFileSync(join(ROOT, 'docker/Dockerfile'), 'utf8')
      .split('\n')
      .map((line) => /^FROM\s+(?:--platform=\S+\s+)?node:(\d+)\S*/i.exec(line)?.[1])
      .filter((found): found is string => found !== undefined);
    expect(bases.length).toBeGreaterThan(0);
    for (const base of bases) expect(Number(base)).toBe(supported);
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
