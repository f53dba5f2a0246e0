// The base image of docker/Dockerfile, made locally: nothing comes from Docker Hub. It stands in
// for the official node:<major>-<suite>-slim with the same layout (node in /usr/local/bin, npm in
// /usr/local/lib/node_modules, a `node` user with uid 1000) and the exact Node the tests run on.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { arch, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fail, log, onCleanUp, out, sh } from './shell.mjs';

const LABEL = 'org.nest-offload.stand-in-node';
const NPM_MAJOR = 11;

/**
 * The Node binary package `npm ci` installs on this host (scripts/node-runtime), as package-lock.json
 * pins it: `{ name, version, integrity }`.
 */
export function lockedNode(lock) {
  const nodeArch = { x64: 'x64', arm64: 'arm64' }[arch()];
  if (!nodeArch) fail(`npm has no node-linux-<arch> package for ${arch()}`);
  const name = `node-linux-${nodeArch}`;
  const locked = lock.packages[`node_modules/${name}`];
  if (!locked?.version || !locked.integrity) fail(`package-lock.json has no version and integrity for ${name}: scripts/node-runtime pins the Node the tests run on`);
  return { name, version: locked.version, integrity: locked.integrity };
}

/** Makes `tag` unless podman's storage already holds it with this Node (see lockedNode); `suite` is the Debian release. */
export function ensureBaseImage(tag, suite, node) {
  const nodeVersion = node.version;
  const exists = sh('podman', ['image', 'exists', tag], { quiet: true, allowFail: true }).status === 0;
  if (exists && out('podman', ['image', 'inspect', '--format', `{{index .Labels "${LABEL}"}}`, tag]) === nodeVersion) {
    log(`${tag} with Node ${nodeVersion} is in podman's storage: reused`);
    return;
  }
  const dir = mkdtempSync(join(tmpdir(), 'nest-offload-base-'));
  onCleanUp(() => rmSync(dir, { recursive: true, force: true }));
  const rootfs = join(dir, 'rootfs');
  const mirror = debianMirror();
  log(`debootstrap ${suite} (minbase) from ${mirror}`);
  sh('debootstrap', ['--variant=minbase', '--include=libatomic1', suite, rootfs, mirror], { quiet: true });
  log(`${node.name}@${nodeVersion} and npm@${NPM_MAJOR} from npm`);
  sh('npm', ['pack', '--silent', '--pack-destination', dir, `${node.name}@${nodeVersion}`, `npm@${NPM_MAJOR}`], { quiet: true });
  const tarball = (prefix) => join(dir, readdirSync(dir).find((f) => f.startsWith(prefix) && f.endsWith('.tgz')));
  // why: the stand-in carries the very bytes `npm ci` installs for the tests, not whatever the registry serves now.
  const integrity = `sha512-${createHash('sha512').update(readFileSync(tarball(`${node.name}-`))).digest('base64')}`;
  if (integrity !== node.integrity) fail(`${node.name}@${nodeVersion} from npm is ${integrity}; package-lock.json pins ${node.integrity}`);
  for (const [prefix, target] of [
    [`${node.name}-`, 'node-pkg'],
    [`npm-${NPM_MAJOR}.`, 'npm-pkg'],
  ]) {
    mkdirSync(join(dir, target));
    sh('tar', ['xzf', tarball(prefix), '-C', join(dir, target)]);
  }
  sh('sh', [
    '-ec',
    `cd "$1"
     install -m 755 node-pkg/package/bin/node rootfs/usr/local/bin/node
     mkdir -p rootfs/usr/local/lib/node_modules
     cp -a npm-pkg/package rootfs/usr/local/lib/node_modules/npm
     ln -s ../lib/node_modules/npm/bin/npm-cli.js rootfs/usr/local/bin/npm
     ln -s ../lib/node_modules/npm/bin/npx-cli.js rootfs/usr/local/bin/npx
     chroot rootfs groupadd --gid 1000 node
     chroot rootfs useradd --uid 1000 --gid node --shell /bin/bash --create-home node
     rm -rf rootfs/var/cache/apt/archives/*.deb rootfs/var/lib/apt/lists/*`,
    'sh',
    dir,
  ]);
  const version = out('chroot', [rootfs, 'node', '-v']);
  if (version !== `v${nodeVersion}`) fail(`the stand-in's node says ${version}, expected v${nodeVersion}`);
  sh(
    'sh',
    [
      '-ec',
      'tar -C "$1" -c . | podman import --change "$2" --change "$3" --change "$4" - "$5"',
      'sh',
      rootfs,
      'CMD ["node"]',
      'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
      `LABEL ${LABEL}=${nodeVersion}`,
      tag,
    ],
    { quiet: true },
  );
}

/** DEBIAN_MIRROR, else the Debian archive this host's apt uses, else deb.debian.org. */
function debianMirror() {
  if (process.env.DEBIAN_MIRROR) return process.env.DEBIAN_MIRROR;
  const uris = [];
  for (const file of ['/etc/apt/sources.list.d/debian.sources', '/etc/apt/sources.list']) {
    if (!existsSync(file)) continue;
    for (const m of readFileSync(file, 'utf8').matchAll(/^(?:URIs:|deb)\s+(?:\[[^\]]*\]\s+)?(\S+)/gm)) uris.push(m[1]);
  }
  return uris.find((uri) => /\/debian\/?$/.test(uri)) ?? 'http://deb.debian.org/debian';
}
