// The base image of docker/Dockerfile, made locally: nothing comes from Docker Hub. It stands in
// for the official node:<major>-<suite>-slim with the same layout (node in /usr/local/bin, npm in
// /usr/local/lib/node_modules, a `node` user with uid 1000) and the exact Node the tests run on.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { arch, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fail, log, onCleanUp, out, sh } from './shell.mjs';

const LABEL = 'org.nest-offload.stand-in-node';
const NPM_MAJOR = 11;

/** Makes `tag` unless podman's storage already holds it with this Node; `suite` is the Debian release. */
export function ensureBaseImage(tag, suite, nodeVersion) {
  const exists = sh('podman', ['image', 'exists', tag], { quiet: true, allowFail: true }).status === 0;
  if (exists && out('podman', ['image', 'inspect', '--format', `{{index .Labels "${LABEL}"}}`, tag]) === nodeVersion) {
    log(`${tag} with Node ${nodeVersion} is in podman's storage: reused`);
    return;
  }
  const nodeArch = { x64: 'x64', arm64: 'arm64' }[arch()];
  if (!nodeArch) fail(`npm has no node-linux-<arch> package for ${arch()}`);
  const dir = mkdtempSync(join(tmpdir(), 'nest-offload-base-'));
  onCleanUp(() => rmSync(dir, { recursive: true, force: true }));
  const rootfs = join(dir, 'rootfs');
  const mirror = debianMirror();
  log(`debootstrap ${suite} (minbase) from ${mirror}`);
  sh('debootstrap', ['--variant=minbase', '--include=libatomic1', suite, rootfs, mirror], { quiet: true });
  log(`node-linux-${nodeArch}@${nodeVersion} and npm@${NPM_MAJOR} from npm`);
  sh('npm', ['pack', '--silent', '--pack-destination', dir, `node-linux-${nodeArch}@${nodeVersion}`, `npm@${NPM_MAJOR}`], { quiet: true });
  for (const [prefix, target] of [
    [`node-linux-${nodeArch}-`, 'node-pkg'],
    [`npm-${NPM_MAJOR}.`, 'npm-pkg'],
  ]) {
    const tarball = readdirSync(dir).find((f) => f.startsWith(prefix) && f.endsWith('.tgz'));
    mkdirSync(join(dir, target));
    sh('tar', ['xzf', join(dir, tarball), '-C', join(dir, target)]);
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
