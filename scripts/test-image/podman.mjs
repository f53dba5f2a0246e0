// Building the two targets and running them as hardened containers, plus the Redis they use.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, log, onCleanUp, out, sh, waitFor } from './shell.mjs';

export const TAG = 'image-test';
/** The port each app listens on inside its container (the image's defaults). */
export const PORTS = { api: 3000, worker: 3001 };
// why runc: crun (podman's default when installed) refuses hybrid cgroup v1/v2 hosts like this VM.
const RUNTIME = ['--runtime', 'runc'];
// why slirp4netns: the containers reach the host's loopback as 10.0.2.2, so Redis never listens
// beyond 127.0.0.1, and published ports still go through podman as on any host.
const NETWORK = ['--network', 'slirp4netns:allow_host_loopback=true'];
export const HOST_FROM_CONTAINER = '10.0.2.2';

/**
 * Volumes for the build's RUN steps so its `npm ci` reaches the registry the way this host does (a
 * private registry, or a TLS-inspecting proxy the host's CA bundle trusts), changing neither the
 * Dockerfile nor the image.
 */
export function buildMounts() {
  const dir = mkdtempSync(join(tmpdir(), 'nest-offload-build-'));
  onCleanUp(() => rmSync(dir, { recursive: true, force: true }));
  const bundle = ['/etc/ssl/certs/ca-certificates.crt', '/etc/pki/tls/certs/ca-bundle.crt'].find(existsSync);
  const npmrc = join(dir, 'npmrc');
  writeFileSync(npmrc, `registry=${out('npm', ['config', 'get', 'registry'])}\n${bundle ? 'cafile=/etc/ssl/certs/host-ca-bundle.crt\n' : ''}`);
  return [...(bundle ? ['-v', `${bundle}:/etc/ssl/certs/host-ca-bundle.crt:ro`] : []), '-v', `${npmrc}:/root/.npmrc:ro`];
}

/** `docker build -f docker/Dockerfile --target <target>`, with podman; returns the image's name. */
export function buildTarget(target, mounts) {
  const image = `localhost/nest-offload-${target}:${TAG}`;
  // why --pull=never: the base is the local stand-in; nothing may come from Docker Hub.
  const { stdout } = sh('podman', ['build', ...RUNTIME, '--pull=never', ...mounts, '-f', 'docker/Dockerfile', '--target', target, '-t', image, '.'], {
    quiet: true,
  });
  const installs = stdout.split('\n').filter((line) => /^added \d+ packages/.test(line));
  log(`${target}: ${installs.join('; ') || 'every step from the build cache'}`);
  return image;
}

/** A throwaway redis-server on the host's loopback; stopped with the run. */
export async function startRedis() {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'nest-offload-image-redis-'));
  const proc = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], {
    stdio: 'ignore',
  });
  onCleanUp(() => {
    proc.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });
  await waitFor('redis-server', () => ping(port), 10_000);
  return port;
}

function ping(port) {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write('PING\r\n'));
    socket.once('data', (data) => {
      socket.destroy();
      resolve(data.toString().startsWith('+PONG'));
    });
    socket.once('error', reject);
  });
}

/**
 * Explicit ulimits: podman's defaults (nofile 1048576) exceed what some VMs allow, and runc then
 * refuses to start the container. These values start in this VM (its own hard limits, nproc 96364,
 * do not), capped by the host's hard limits elsewhere; the apps need far fewer.
 */
function ulimits() {
  const limits = readFileSync('/proc/self/limits', 'utf8');
  const hard = (what) => Number(new RegExp(`^Max ${what}\\s+\\S+\\s+(\\d+)`, 'm').exec(limits)?.[1] ?? Infinity);
  return Object.entries({ nofile: Math.min(20_000, hard('open files')), nproc: Math.min(32_768, hard('processes')) }).flatMap(([name, value]) => [
    '--ulimit',
    `${name}=${value}:${value}`,
  ]);
}

/** Removes containers of earlier runs that were killed before they could clean up (their pid is gone). */
export function removeLeftovers() {
  for (const name of out('podman', ['ps', '-a', '--format', '{{.Names}}']).split('\n')) {
    const pid = Number(new RegExp(`^nest-offload-${TAG}-\\w+-(\\d+)-`).exec(name)?.[1]);
    if (!pid) continue;
    try {
      process.kill(pid, 0);
    } catch {
      log(`removing ${name}, left by a run that was killed`);
      sh('podman', ['rm', '-f', '--time', '0', name], { quiet: true, allowFail: true });
    }
  }
}

/**
 * Starts `image` hardened like the Kubernetes manifests: read-only root with /tmp as the only
 * writable place, no capabilities, no privilege gain. No --user: the image's own USER must be the
 * non-root one. Its port is published on a free 127.0.0.1 port (`url`).
 */
export function runContainer(kind, image, runId, env, extra = []) {
  const name = `nest-offload-${TAG}-${kind}-${runId}`;
  onCleanUp(() => sh('podman', ['rm', '-f', '--time', '0', name], { quiet: true, allowFail: true }));
  sh(
    'podman',
    [
      'run', '-d', '--name', name, ...RUNTIME, ...NETWORK, ...ulimits(),
      '--read-only', '--read-only-tmpfs=false', '--tmpfs', '/tmp', '--cap-drop', 'ALL', '--security-opt', 'no-new-privileges',
      ...Object.entries(env).flatMap(([k, v]) => ['-e', `${k}=${v}`]),
      '-p', `127.0.0.1::${PORTS[kind]}`, ...extra, image,
    ],
    { quiet: true },
  );
  return {
    kind,
    name,
    url: `http://${out('podman', ['port', name, String(PORTS[kind])])}`,
    logs: () => {
      const result = spawnSync('podman', ['logs', name], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
      return `${result.stdout ?? ''}${result.stderr ?? ''}`;
    },
    exitCode: () => out('podman', ['inspect', '--format', '{{.State.ExitCode}}', name]),
  };
}

/** The image's root filesystem, read-only from podman's storage until the run ends. */
export function mountImage(image) {
  const path = out('podman', ['image', 'mount', image]);
  onCleanUp(() => sh('podman', ['image', 'umount', image], { quiet: true, allowFail: true }));
  return path;
}
