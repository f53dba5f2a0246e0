import { existsSync, readdirSync } from 'node:fs';
import { join, posix } from 'node:path';
import { readAcceptedEnv, readRepoFile, readWorkerHandBackGraceMs, ROOT } from './deploy/app-source';
import { envOf, inheritedInstructions, lastOf, parseDockerfile } from './deploy/dockerfile';
import {
  ComposeService,
  Container,
  cpuCores,
  Deployment,
  durationMs,
  K8sObject,
  Kustomization,
  memoryMiB,
  readEnvFile,
  readYaml,
  selects,
} from './deploy/manifests';

/**
 * Static checks of docker/ and deploy/k8s/ against the code they run: no Docker engine or cluster
 * needed. The e2e run builds first, so the dist/ entry points the images start must exist.
 */

// Bump when the next even Node major becomes Active LTS (Node 26: October 2026).
const NODE_LTS_MAJOR = 26;
/** Besides the pool threads' heaps: the main thread, young generations and buffers. */
const MAIN_THREAD_HEADROOM_MIB = 512;
/** Time between the worker giving up on its drain and being killed anyway. */
const KILL_MARGIN_MS = 5_000;
/** How long a removed endpoint takes to reach kube-proxy and ingresses: the API's minimum preStop pause. */
const ENDPOINT_PROPAGATION_SECONDS = 3;
/** What the API needs after SIGTERM to finish in-flight requests (it releases long polls at once). */
const API_CLOSE_SECONDS = 10;

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
      expect(JSON.parse(cmd)).toEqual(['node', `dist/apps/${app}/src/main.js`]);
      expect(lastOf(instructions, 'ENTRYPOINT')).toBeUndefined();
      expect(existsSync(join(ROOT, `dist/apps/${app}/src/main.js`))).toBe(true);
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

describe('deploy/k8s', () => {
  const dir = 'deploy/k8s';
  const kustomization = readYaml(`${dir}/kustomization.yaml`)[0] as Kustomization;
  const objects = kustomization.resources.flatMap((file) => readYaml(`${dir}/${file}`)) as K8sObject[];
  const generated = kustomization.configMapGenerator ?? [];
  const configEnv = new Map(generated.flatMap((g) => g.envs ?? []).flatMap((file) => [...readEnvFile(`${dir}/${file}`)]));
  const secretExamples = readYaml(`${dir}/secret.example.yaml`) as Array<K8sObject & { stringData: Record<string, string> }>;
  const secretNamed = (name: string) => secretExamples.find((s) => s.metadata.name === name)!;

  const ofKind = <T extends K8sObject>(kind: string) => objects.filter((o): o is T => o.kind === kind);
  const deployment = (app: string) => {
    const found = ofKind<Deployment>('Deployment').find((d) => d.spec.template.metadata.labels['app.kubernetes.io/component'] === app);
    if (!found) throw new Error(`no Deployment for ${app}`);
    return found;
  };
  const containerOf = (app: string): Container => deployment(app).spec.template.spec.containers[0];
  /** A variable as the container sees it: its own env, then the ConfigMap, then the app's default. */
  const effective = (container: Container, name: string): number =>
    Number(container.env?.find((e) => e.name === name)?.value ?? configEnv.get(name) ?? defaultOf(name));

  it('kustomization lists every manifest here, except the Secret example', () => {
    const manifests = readdirSync(join(ROOT, dir)).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml');
    expect([...kustomization.resources].sort()).toEqual(manifests.filter((f) => !f.includes('.example.')).sort());
    for (const file of generated.flatMap((g) => g.envs ?? [])) expect(existsSync(join(ROOT, dir, file))).toBe(true);
    for (const file of manifests) expect(() => readYaml(`${dir}/${file}`)).not.toThrow();
  });

  describe.each(APPS)('$app Deployment', ({ app, portVariable }) => {
    const pod = deployment(app).spec.template;
    const container = containerOf(app);
    const port = effective(container, portVariable);
    const portNumber = (ref: number | string | undefined) =>
      typeof ref === 'number' ? ref : container.ports?.find((p) => p.name === ref)?.containerPort;

    it(`probes /health/ready and /health/live on ${portVariable}`, () => {
      expect(container.ports?.map((p) => p.containerPort)).toContain(port);
      expect(container.readinessProbe?.httpGet?.path).toBe('/health/ready');
      expect(container.livenessProbe?.httpGet?.path).toBe('/health/live');
      for (const probe of [container.readinessProbe, container.livenessProbe, container.startupProbe]) {
        if (probe) expect(portNumber(probe.httpGet?.port)).toBe(port);
      }
    });

    it('runs as non-root on a read-only root filesystem, without privileges, with /tmp writable', () => {
      const security = { ...pod.spec.securityContext, ...container.securityContext };
      expect(security).toMatchObject({
        runAsNonRoot: true,
        allowPrivilegeEscalation: false,
        readOnlyRootFilesystem: true,
        seccompProfile: { type: 'RuntimeDefault' },
      });
      expect(security.runAsUser).toBeGreaterThan(0);
      expect(security.capabilities?.drop).toContain('ALL');
      const tmp = container.volumeMounts?.find((m) => m.mountPath === '/tmp');
      expect(pod.spec.volumes?.find((v) => v.name === tmp?.name)?.emptyDir).toBeDefined();
    });

    it('sets requests and limits, and has Prometheus scrape /metrics on the app port', () => {
      for (const bound of [container.resources?.requests, container.resources?.limits]) {
        expect(Object.keys(bound ?? {})).toEqual(expect.arrayContaining(['cpu', 'memory']));
      }
      expect(pod.metadata.annotations).toMatchObject({
        'prometheus.io/scrape': 'true',
        'prometheus.io/port': String(port),
        'prometheus.io/path': '/metrics',
      });
    });

    it('turns off service links, which would inject <SERVICE>_PORT variables the config rejects', () => {
      expect(pod.spec.enableServiceLinks).toBe(false);
    });

    it('reads its config from the generated ConfigMap and the Secrets of the example', () => {
      const refs = container.envFrom ?? [];
      expect(refs.map((r) => r.configMapRef?.name).filter(Boolean)).toEqual(generated.map((g) => g.name));
      const secrets = refs.map((r) => r.secretRef?.name).filter((n): n is string => Boolean(n));
      expect(secrets).toEqual(app === 'api' ? ['nest-offload-redis', 'nest-offload-api-keys'] : ['nest-offload-redis']);
      for (const name of secrets) expect(secretNamed(name)).toBeDefined();
    });
  });

  it('gives the API the keys it needs to start in production', () => {
    const sources = (containerOf('api').envFrom ?? []).flatMap((r) =>
      r.secretRef ? Object.keys(secretNamed(r.secretRef.name).stringData) : r.configMapRef ? [...configEnv.keys()] : [],
    );
    expect(configEnv.get('NODE_ENV')).toBe('production');
    expect(sources.includes('API_KEYS') || configEnv.get('ALLOW_UNAUTHENTICATED') === 'true').toBe(true);
  });

  it('gives the worker longer to stop than its drain deadline plus the hand-back of unfinished jobs', () => {
    const graceSeconds = deployment('worker').spec.template.spec.terminationGracePeriodSeconds ?? 30;
    expect(graceSeconds * 1000).toBeGreaterThanOrEqual(workerStopMs(effective(containerOf('worker'), 'SHUTDOWN_TIMEOUT_MS')));
  });

  it('runs one pool thread per CPU of the worker limit, with memory for every thread heap', () => {
    const worker = containerOf('worker');
    const cpuLimit = cpuCores(worker.resources!.limits!.cpu);
    expect(Number.isInteger(cpuLimit)).toBe(true);
    const threads = worker.env?.find((e) => e.name === 'WORKER_THREADS');
    // Either read from the limit itself (resourceFieldRef rounds up to whole CPUs) or spelled out equal to it.
    const fromLimit = threads?.valueFrom?.resourceFieldRef;
    if (fromLimit) expect([fromLimit.resource, String(fromLimit.divisor ?? 1)]).toEqual(['limits.cpu', '1']);
    else expect(Number(threads?.value)).toBe(cpuLimit);
    const heapsMiB = cpuLimit * effective(worker, 'WORKER_MAX_MEMORY_MB');
    expect(memoryMiB(worker.resources!.limits!.memory)).toBeGreaterThanOrEqual(heapsMiB + MAIN_THREAD_HEADROOM_MIB);
  });

  it('lets endpoints drop the API before SIGTERM, within its grace period', () => {
    const spec = deployment('api').spec.template.spec;
    const preStop = containerOf('api').lifecycle?.preStop;
    const pauseSeconds = preStop?.sleep?.seconds ?? Number(preStop?.exec?.command.at(-1));
    expect(pauseSeconds).toBeGreaterThanOrEqual(ENDPOINT_PROPAGATION_SECONDS);
    expect(spec.terminationGracePeriodSeconds ?? 30).toBeGreaterThanOrEqual(pauseSeconds + API_CLOSE_SECONDS);
  });

  it('points the Service, PodDisruptionBudgets and HorizontalPodAutoscalers at the Deployments', () => {
    // A Service selects with plain labels, a PodDisruptionBudget with matchLabels.
    type Selecting = K8sObject & { spec: { selector: { matchLabels?: Record<string, string> } } };
    type Scaling = K8sObject & { spec: { scaleTargetRef: { kind: string; name: string } } };
    const podLabels = APPS.map(({ app }) => deployment(app).spec.template.metadata.labels);
    const selectingOnePod = (o: Selecting) => {
      const selector = o.spec.selector.matchLabels ?? (o.spec.selector as Record<string, string>);
      return podLabels.filter((labels) => selects(selector, labels)).length === 1;
    };
    const selectors = [...ofKind<Selecting>('Service'), ...ofKind<Selecting>('PodDisruptionBudget')];
    expect(selectors.filter((o) => !selectingOnePod(o)).map((o) => `${o.kind}/${o.metadata.name}`)).toEqual([]);
    expect(ofKind('PodDisruptionBudget')).toHaveLength(APPS.length);
    const scaled = ofKind<Scaling>('HorizontalPodAutoscaler').map((h) => `${h.spec.scaleTargetRef.kind}/${h.spec.scaleTargetRef.name}`);
    expect(scaled.sort()).toEqual(APPS.map(({ app }) => `Deployment/${deployment(app).metadata.name}`).sort());
    // The HPA owns the replica count; a fixed one would reset it on every apply.
    for (const { app } of APPS) expect(deployment(app).spec.replicas).toBeUndefined();
  });

  it('uses only environment variables the config accepts', () => {
    const names = [
      ...configEnv.keys(),
      ...secretExamples.flatMap((s) => Object.keys(s.stringData)),
      ...APPS.flatMap(({ app }) => containerOf(app).env?.map((e) => e.name) ?? []),
    ];
    expect(names.filter((n) => !accepted.names.has(n))).toEqual([]);
    expect(configEnv.get('CHAOS_JOBS') ?? 'false').toBe('false');
  });
});

describe('docker/compose.yaml', () => {
  const compose = readYaml('docker/compose.yaml')[0] as { services: Record<string, ComposeService> };
  const { redis, ...apps } = compose.services;

  it('runs Redis without eviction and with an append-only file, as the queue needs', () => {
    expect(redis.command?.join(' ')).toMatch(/--maxmemory-policy noeviction\b/);
    expect(redis.command?.join(' ')).toMatch(/--appendonly yes\b/);
  });

  describe.each(APPS)('$app service', ({ app, portVariable }) => {
    const service = compose.services[app];
    const port = Number(service.environment?.[portVariable] ?? defaultOf(portVariable));

    it('builds its own Dockerfile target and checks readiness on its port, hardened like the pods', () => {
      const build = service.build!;
      // Compose resolves the context from the compose file's directory, the Dockerfile from the context.
      expect(posix.join('docker', build.context, build.dockerfile)).toBe('docker/Dockerfile');
      expect(build.target).toBe(app);
      expect(service.healthcheck?.test.join(' ')).toContain(`127.0.0.1:${port}/health/ready`);
      expect(service).toMatchObject({ read_only: true, cap_drop: ['ALL'] });
    });
  });

  it('waits for the worker to drain and hand jobs back, and sizes its pool to its CPUs', () => {
    const worker = compose.services.worker;
    const shutdownTimeoutMs = Number(worker.environment?.SHUTDOWN_TIMEOUT_MS ?? defaultOf('SHUTDOWN_TIMEOUT_MS'));
    expect(durationMs(worker.stop_grace_period ?? '10s')).toBeGreaterThanOrEqual(workerStopMs(shutdownTimeoutMs));
    expect(worker.cpus).toBeDefined();
    expect(Number(worker.environment?.WORKER_THREADS)).toBe(Number(worker.cpus));
  });

  it('uses only environment variables the config accepts (the Dockerfile ENV too)', () => {
    const names = [
      ...Object.values(apps).flatMap((s) => Object.keys(s.environment ?? {})),
      ...stages.flatMap((s) => [...envOf(s.instructions).keys()]),
    ];
    expect(names.filter((n) => !accepted.names.has(n))).toEqual([]);
    for (const service of Object.values(apps)) expect(String(service.environment?.CHAOS_JOBS ?? 'false')).toBe('false');
  });
});
