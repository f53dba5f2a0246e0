import { existsSync } from 'node:fs';
import { join, posix } from 'node:path';
import { selectQueues } from '../apps/worker/src/processor/worker-queues';
import { loadConfig } from '@app/config';
import { JobRegistry } from '@app/jobs';
import { readAcceptedEnv, readRepoFile, readWorkerHandBackGraceMs, redisUrlOf, ROOT } from './deploy/app-source';
import { envOf, inheritedInstructions, lastOf, parseDockerfile } from './deploy/dockerfile';
import { ComposeService, durationMs, memoryMiB, readYaml } from './deploy/manifests';
import { QUEUE_REDIS_ARGS } from './support/redis';

/**
 * Static checks of docker/Dockerfile and docker/compose.yaml against the code they run: no Docker
 * engine needed. The e2e run builds first, so the dist/ entry points the images start must exist.
 * docker/kubernetes has its own: test/kubernetes.e2e-spec.ts.
 */

// Bump when the next even Node major becomes Active LTS (Node 26: October 2026).
const NODE_LTS_MAJOR = 26;
/** Besides the pool threads' heaps: the main thread, young generations and buffers. */
const MAIN_THREAD_HEADROOM_MIB = 512;
/** Time between an app giving up on its drain and being killed anyway. */
const KILL_MARGIN_MS = 5_000;

const APPS = [
  { app: 'api', portVariable: 'PORT' },
  { app: 'worker', portVariable: 'WORKER_PORT' },
] as const;

const accepted = readAcceptedEnv();
const stages = parseDockerfile(readRepoFile('docker/Dockerfile'));
const workerStopMs = (shutdownTimeoutMs: number) => shutdownTimeoutMs + readWorkerHandBackGraceMs() + KILL_MARGIN_MS;

function defaultOf(name: string): number {
  const value = accepted.numericDefaults.get(name);
  if (value === undefined) throw new Error(`libs/config has no numeric default for ${name}`);
  return value;
}

describe('docker/Dockerfile', () => {
  const target = (name: string) => {
    const stage = stages.find((s) => s.name === name);
    if (!stage) throw new Error(`docker/Dockerfile has no stage named ${name}`);
    return inheritedInstructions(stages, stage);
  };

  it(`builds every stage on the official node:${NODE_LTS_MAJOR} Debian slim image or an earlier stage`, () => {
    // Debian (glibc): the native prebuilds piscina and msgpackr use exist for glibc, and there is no compiler.
    const image = new RegExp(`^node:${NODE_LTS_MAJOR}(\\.\\d+)*-(bookworm|trixie)-slim(@sha256:[0-9a-f]{64})?$`);
    const earlierStage = (base: string, i: number) => stages.slice(0, i).some((s) => s.name === base);
    const others = stages.filter((s, i) => !earlierStage(s.base, i) && !image.test(s.base)).map((s) => s.base);
    expect(others).toEqual([]);
  });

  describe.each(APPS)('target $app', ({ app, portVariable }) => {
    const instructions = target(app);

    it('starts node itself on the built entry point (exec form, no npm or shell)', () => {
      const cmd = lastOf(instructions, 'CMD') ?? '';
      expect(cmd).toMatch(/^\[/); // exec form; the shell form runs `/bin/sh -c`, which does not forward SIGTERM
      const argv = JSON.parse(cmd) as string[];
      expect([argv[0], argv.at(-1)]).toEqual(['node', `dist/apps/${app}/src/main.js`]);
      // Between them, Node flags only (the API's V8 heap flags: see the Dockerfile's note).
      expect(argv.slice(1, -1).filter((flag) => !/^--[a-z-]+=\d+$/.test(flag))).toEqual([]);
      expect(lastOf(instructions, 'ENTRYPOINT')).toBeUndefined();
      expect(existsSync(join(ROOT, `dist/apps/${app}/src/main.js`))).toBe(true);
    });

    it('is started with the same Node flags by npm run start:<app> (as deployed)', () => {
      const flags = (JSON.parse(lastOf(instructions, 'CMD') ?? '[]') as string[]).slice(1, -1);
      const script = (JSON.parse(readRepoFile('package.json')) as { scripts: Record<string, string> }).scripts[`start:${app}`];
      expect(script.split(' && ').at(-1)).toBe(['node', ...flags, `dist/apps/${app}/src/main.js`].join(' '));
      // npm start (scripts/start.mjs) and the bench (bench/support/stack.ts imageNodeFlags) read them from this CMD line.
    });

    it(`runs as a non-root user with NODE_ENV=production and exposes ${portVariable}'s default`, () => {
      const user = lastOf(instructions, 'USER')?.split(':')[0];
      expect(user).toBeDefined();
      expect(['root', '0']).not.toContain(user);
      expect(envOf(instructions).get('NODE_ENV')).toBe('production');
      expect(Number(lastOf(instructions, 'EXPOSE'))).toBe(defaultOf(portVariable));
    });

    it('copies node_modules from a stage that installed production dependencies only', () => {
      const copies = instructions.filter((i) => i.keyword === 'COPY' && /\snode_modules\/?$/.test(i.args));
      expect(copies).toHaveLength(1);
      const from = /--from=(\S+)/.exec(copies[0].args)?.[1];
      const source = stages.find((s) => s.name === from);
      expect(source?.instructions.some((i) => i.keyword === 'RUN' && /npm (ci|prune) .*--omit=dev/.test(i.args))).toBe(true);
    });
  });

  it('.dockerignore keeps dependencies, build output, git and env files out, and nothing the build copies', () => {
    const ignored = new Set(readRepoFile('.dockerignore').split('\n').map((l) => l.trim().replace(/^\/|\/$/g, '')));
    expect([...ignored]).toEqual(expect.arrayContaining(['node_modules', 'dist', '.git', '.env']));
    const contextSources = stages
      .flatMap((s) => s.instructions)
      .filter((i) => i.keyword === 'COPY' && !i.args.includes('--from='))
      .flatMap((i) => i.args.split(/\s+/).filter((w) => !w.startsWith('--')).slice(0, -1));
    expect(contextSources.filter((source) => ignored.has(source) || ignored.has(source.split('/')[0]))).toEqual([]);
    expect(contextSources.filter((source) => !existsSync(join(ROOT, source)))).toEqual([]);
  });
});

describe('docker/compose.yaml', () => {
  const compose = readYaml('docker/compose.yaml')[0] as { services: Record<string, ComposeService> };
  const apps = Object.entries(compose.services).filter(([, s]) => s.build);
  const workers = apps.filter(([, s]) => s.build!.target === 'worker');
  const env = (service: ComposeService) => Object.fromEntries(Object.entries(service.environment ?? {}).map(([k, v]) => [k, String(v)]));
  const config = (service: ComposeService) => loadConfig(env(service), service.build!.target as 'api' | 'worker');
  /** The compose service a redis:// URL names, with its command line. */
  const redisFor = (url: string) => {
    const service = compose.services[new URL(url).hostname];
    expect(service?.image).toMatch(/^redis:/);
    return service.command!.join(' ');
  };

  it('runs the queue Redis without eviction and with an append-only file, as the queue needs', () => {
    for (const [, service] of apps) {
      const command = redisFor(redisUrlOf(config(service).queueRedis));
      expect(command).toMatch(/--maxmemory-policy noeviction\b/);
      expect(command).toMatch(/--appendonly yes\b/);
      // The settings the tests and the bench run their Redis with (test/support/redis.ts).
      expect(command).toContain(QUEUE_REDIS_ARGS.join(' '));
    }
  });

  it('runs a separate cache Redis, bounded by maxmemory with allkeys-lru', () => {
    for (const [, service] of apps) {
      const redisUrl = redisUrlOf(config(service).queueRedis);
      const cacheRedisUrl = redisUrlOf(config(service).cacheRedis);
      expect(new URL(cacheRedisUrl).hostname).not.toBe(new URL(redisUrl).hostname);
      const command = redisFor(cacheRedisUrl);
      expect(command).toMatch(/--maxmemory-policy allkeys-lru\b/);
      expect(command).toMatch(/--maxmemory \d+[kmg]b\b/);
    }
  });

  describe.each(apps.map(([name, service]) => ({ name, service })))('$name service', ({ service }) => {
    const app = service.build!.target as 'api' | 'worker';
    const portVariable = APPS.find((a) => a.app === app)!.portVariable;

    it('builds its Dockerfile target and checks readiness on its port, hardened like the pods, with a config the app accepts', () => {
      const build = service.build!;
      // Compose resolves the context from the compose file's directory, the Dockerfile from the context.
      expect(posix.join('docker', build.context, build.dockerfile)).toBe('docker/Dockerfile');
      const port = app === 'api' ? config(service).port : config(service).workerPort;
      expect(port).toBe(Number(env(service)[portVariable] ?? defaultOf(portVariable)));
      expect(service.healthcheck?.test.join(' ')).toContain(`127.0.0.1:${port}/health/ready`);
      expect(service).toMatchObject({ read_only: true, cap_drop: ['ALL'] });
      expect(service.image).toBe(`nest-offload-${app}`);
    });

    it('stops within its grace period: the drain deadline, plus the hand-back of jobs for a worker', () => {
      const { shutdownTimeoutMs } = config(service);
      expect(durationMs(service.stop_grace_period ?? '10s')).toBeGreaterThanOrEqual(app === 'worker' ? workerStopMs(shutdownTimeoutMs) : shutdownTimeoutMs + KILL_MARGIN_MS);
    });
  });

  it('keeps job files in one volume that the API and every worker mount, as a file blob store production accepts', () => {
    expect(Object.keys((compose as { volumes?: object }).volumes ?? {})).toContain('blobs');
    for (const [name, service] of apps) {
      const { blobStore } = config(service);
      expect([name, blobStore]).toEqual([name, { kind: 'file', dir: '/blobs' }]);
      expect([name, (service as { volumes?: string[] }).volumes]).toEqual([name, ['blobs:/blobs']]);
    }
    // A new named volume takes the owner of the image's directory: the app user's.
    expect(readRepoFile('docker/Dockerfile')).toMatch(/^RUN mkdir \/blobs && chown 1000:1000 \/blobs$/m);
  });

  it('scales workers with `--scale`: no fixed host port on a worker', () => {
    for (const [, service] of workers) {
      // `127.0.0.1::3001` (a free host port each) or no published port at all.
      for (const port of service.ports ?? []) expect(String(port)).toMatch(/^(127\.0\.0\.1::)?\d+$/);
    }
  });

  it('has a worker service per queue group, together consuming every queue', () => {
    const registry = JobRegistry.forConfig({ chaosJobs: false });
    const consumed = workers.flatMap(([, s]) => {
      expect(env(s).WORKER_QUEUES).toBeDefined();
      return selectQueues(registry, config(s).workerQueues);
    });
    expect(consumed.sort()).toEqual(registry.workerQueues());
  });

  it('sizes each worker pool to its CPUs, with memory for every thread heap', () => {
    for (const [, service] of workers) {
      expect(service.cpus).toBeDefined();
      const { workerThreads, workerMaxMemoryMb } = config(service);
      expect(workerThreads).toBe(Number(service.cpus));
      expect(memoryMiB(String(service.mem_limit).replace(/^(\d+)([kmg])$/i, (_, n: string, u: string) => `${n}${u.toUpperCase()}i`))).toBeGreaterThanOrEqual(
        workerThreads * workerMaxMemoryMb + MAIN_THREAD_HEADROOM_MIB,
      );
    }
  });

  it('uses only environment variables the config accepts (the Dockerfile ENV too)', () => {
    const names = [...apps.flatMap(([, s]) => Object.keys(s.environment ?? {})), ...stages.flatMap((s) => [...envOf(s.instructions).keys()])];
    expect(names.filter((n) => !accepted.names.has(n))).toEqual([]);
    for (const [, service] of apps) expect(env(service).CHAOS_JOBS ?? 'false').toBe('false');
  });
});
