import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { QUEUE_BACKLOG_METRIC } from '../apps/api/src/jobs/queue.metrics';
import { JobRegistry } from '@app/jobs';
import { BULL_STRUCTURES, bullKey } from '@app/queue';
import { readAcceptedEnv, readRepoFile, readWorkerHandBackGraceMs, redisUrlOf, ROOT } from './deploy/app-source';
import { applyPatch, kustomizeCommand, Manifest, nameSuffix } from './deploy/kustomize';
import { cpuCores, K8sObject, memoryMiB, readYaml, selects, Workload } from './deploy/manifests';
import { allows, matches, NetworkPolicy } from './deploy/network-policy';
import { APP_LABEL, COMPONENT, Hpa, Overlay, Pdb, ScaledObject, Service, TriggerAuthentication } from './deploy/overlay';
import { schemaErrors, unknownFieldErrors } from './deploy/schemas';

/**
 * docker/kubernetes against the code it runs: both overlays rendered (test/deploy/kustomize.ts),
 * every object checked against the Kubernetes and KEDA schemas, and the invariants the apps rely
 * on. No cluster needed. test/keda.e2e-spec.ts evaluates the KEDA triggers against a real API and Redis.
 */

const OVERLAYS = ['dev', 'prod'] as const;
type OverlayName = (typeof OVERLAYS)[number];
const DIR = 'docker/kubernetes';

/** Besides the pool threads' heaps: the main thread, young generations and buffers. */
const MAIN_THREAD_HEADROOM_MIB = 512;
/** Time between an app giving up on its drain and being killed anyway. */
const KILL_MARGIN_MS = 5_000;
/** How long a removed endpoint takes to reach kube-proxy and ingresses: the API's minimum preStop pause. */
const ENDPOINT_PROPAGATION_SECONDS = 3;
const QUEUES = JobRegistry.forConfig({ chaosJobs: false }).queues();
const accepted = readAcceptedEnv();

const overlays = Object.fromEntries(OVERLAYS.map((name) => [name, new Overlay(name)])) as Record<OverlayName, Overlay>;
const where = (o: K8sObject) => `${o.kind}/${o.metadata.name}`;
const resourcesOf = (dir: string) => (parse(readRepoFile(`${dir}/kustomization.yaml`)) as { resources?: string[] }).resources ?? [];

describe('test/deploy/kustomize.ts (the renderer)', () => {
  const command = kustomizeCommand();

  // CI's machines have kubectl; elsewhere this comparison is reported as skipped, never passed.
  (command ? it : it.skip).each(OVERLAYS)(
    `renders overlays/%s as the real kustomize does (${command?.join(' ') ?? 'no kustomize or kubectl on PATH'})`,
    (name) => {
      const out = execFileSync(command![0], [...command!.slice(1), join(ROOT, overlays[name].dir)], { encoding: 'utf8' });
      const key = (o: Manifest) => `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;
      const byKey = (objects: Manifest[]) => Object.fromEntries(objects.map((o) => [key(o), o]));
      const real = readYamlText(out) as Manifest[];
      expect(byKey(overlays[name].objects)).toEqual(byKey(real));
    },
  );

  it("names generated objects with kustomize's content hash (values printed by kustomize 5.5)", () => {
    const configMap = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'fixture' }, data: { A: '1', B: '<&>' } };
    const secret = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'fixture' }, type: 'Opaque', data: { PASSWORD: Buffer.from('s3cret').toString('base64') } };
    expect(nameSuffix(configMap)).toBe('6mggc5fd49');
    expect(nameSuffix(secret)).toBe('k756ct962b');
  });

  it('applies JSON 6902 patches and refuses a path that is not there, as kustomize does', () => {
    const object: Manifest = { apiVersion: 'v1', kind: 'X', metadata: { name: 'x' }, spec: { list: [1, 2], n: 1 } };
    expect(
      applyPatch(object, [
        { op: 'add', path: '/spec/list/-', value: 3 },
        { op: 'replace', path: '/spec/n', value: 2 },
        { op: 'add', path: '/spec/new', value: { a: 1 } },
        { op: 'remove', path: '/spec/list/0' },
      ]).spec,
    ).toEqual({ list: [2, 3], n: 2, new: { a: 1 } });
    expect(() => applyPatch(object, [{ op: 'replace', path: '/spec/missing', value: 1 }])).toThrow(/nothing there/);
    expect(() => applyPatch(object, [{ op: 'add', path: '/spec/no/deeper', value: 1 }])).toThrow(/does not exist/);
  });
});

describe.each(OVERLAYS)('docker/kubernetes/overlays/%s', (name) => {
  const overlay = overlays[name];
  const workers = overlay.apps('worker');

  it('renders every manifest of the overlay and the base (the Secret example excepted)', () => {
    for (const dir of [`${DIR}/base`, overlay.dir]) {
      const files = readdirSync(join(ROOT, dir)).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml' && !f.includes('.example.'));
      expect(resourcesOf(dir).filter((r) => !r.startsWith('..')).sort()).toEqual(files.sort());
    }
    expect(resourcesOf(overlay.dir)).toContain('../../base');
  });

  it('every object is valid against the Kubernetes and KEDA schemas', () => {
    expect(schemaErrors(overlay.objects)).toEqual([]);
    expect(schemaErrors(overlay.examples as Manifest[])).toEqual([]);
  });

  it('no object has a field the schemas do not declare (kubectl apply would refuse it)', () => {
    expect(unknownFieldErrors([...overlay.objects, ...(overlay.examples as Manifest[])])).toEqual([]);
  });

  it('puts every object in one namespace', () => {
    const namespaced = overlay.objects.filter((o) => o.kind !== 'Namespace');
    expect(new Set(namespaced.map((o) => o.metadata.namespace))).toEqual(new Set([overlay.namespace]));
  });

  it('starts each app with a configuration its own parser accepts, with only variables it knows', () => {
    for (const app of [overlay.api, ...workers]) {
      expect(() => overlay.config(app)).not.toThrow();
      const env = overlay.env(app);
      expect(Object.keys(env).filter((n) => !accepted.names.has(n))).toEqual([]);
      expect(env.CHAOS_JOBS ?? 'false').toBe('false');
      expect(env.DEMO ?? 'false').toBe('false');
    }
  });

  it('has one worker Deployment per queue group, naming queues that exist and together covering every queue', () => {
    expect(workers.length).toBeGreaterThan(0);
    const consumed = workers.map((w) => {
      // Explicit, so a new queue is not silently consumed by every group.
      expect(overlay.env(w).WORKER_QUEUES).toBeDefined();
      return overlay.queues(w);
    });
    expect(consumed.flat().sort()).toEqual(QUEUES);
  });

  describe('every pod', () => {
    it('runs as non-root on a read-only root filesystem, without privileges or capabilities, with /tmp an emptyDir', () => {
      for (const w of overlay.workloads) {
        const pod = w.spec.template.spec;
        expect({ name: where(w), automount: pod.automountServiceAccountToken, serviceLinks: pod.enableServiceLinks }).toEqual({
          name: where(w),
          automount: false,
          // why: service links inject <SERVICE>_PORT=tcp://… variables; WORKER_PORT would stop the worker.
          serviceLinks: false,
        });
        for (const container of pod.containers) {
          const security = { ...pod.securityContext, ...container.securityContext };
          expect({ name: where(w), ...security }).toMatchObject({
            name: where(w),
            runAsNonRoot: true,
            allowPrivilegeEscalation: false,
            readOnlyRootFilesystem: true,
            seccompProfile: { type: 'RuntimeDefault' },
          });
          expect(security.runAsUser).toBeGreaterThan(0);
          expect(security.capabilities?.drop).toEqual(['ALL']);
          const tmp = container.volumeMounts?.find((m) => m.mountPath === '/tmp');
          expect(pod.volumes?.find((v) => v.name === tmp?.name)?.emptyDir).toBeDefined();
          for (const bound of [container.resources?.requests, container.resources?.limits]) {
            expect(Object.keys(bound ?? {}).sort()).toEqual(['cpu', 'memory']);
          }
          expect(container.readinessProbe && container.livenessProbe).toBeDefined();
        }
      }
    });
  });

  describe.each(['api', 'worker'] as const)('%s Deployments', (component) => {
    const deployments = overlay.apps(component);

    it('probe /health/ready and /health/live on the port the app listens on, and have /metrics scraped there', () => {
      expect(deployments.length).toBeGreaterThan(0);
      for (const d of deployments) {
        const config = overlay.config(d);
        const port = component === 'api' ? config.port : config.workerPort;
        const container = d.spec.template.spec.containers[0];
        const portNumber = (ref: number | string | undefined) =>
          typeof ref === 'number' ? ref : container.ports?.find((p) => p.name === ref)?.containerPort;
        expect(container.ports?.map((p) => p.containerPort)).toContain(port);
        expect(container.readinessProbe?.httpGet?.path).toBe('/health/ready');
        expect(container.livenessProbe?.httpGet?.path).toBe('/health/live');
        for (const probe of [container.readinessProbe, container.livenessProbe, container.startupProbe]) {
          if (probe) expect(portNumber(probe.httpGet?.port)).toBe(port);
        }
        expect(d.spec.template.metadata.annotations).toMatchObject({
          'prometheus.io/scrape': 'true',
          'prometheus.io/port': String(port),
          'prometheus.io/path': '/metrics',
        });
      }
    });

    it('have no fixed replica count: an autoscaler owns it', () => {
      for (const d of deployments) expect({ name: where(d), replicas: d.spec.replicas }).toEqual({ name: where(d), replicas: undefined });
    });
  });

  it('gives each worker longer to stop than its drain deadline plus the hand-back of unfinished jobs', () => {
    const tooShort = workers.flatMap((w) => {
      const graceMs = (w.spec.template.spec.terminationGracePeriodSeconds ?? 30) * 1000;
      const neededMs = overlay.config(w).shutdownTimeoutMs + readWorkerHandBackGraceMs() + KILL_MARGIN_MS;
      return graceMs < neededMs ? [`${where(w)}: ${graceMs} ms < ${neededMs} ms`] : [];
    });
    expect(tooShort).toEqual([]);
  });

  it('lets endpoints drop the API before SIGTERM, and gives it its drain deadline after that', () => {
    const spec = overlay.api.spec.template.spec;
    const preStop = spec.containers[0].lifecycle?.preStop;
    const pauseSeconds = preStop?.sleep?.seconds ?? Number(preStop?.exec?.command.at(-1));
    expect(pauseSeconds).toBeGreaterThanOrEqual(ENDPOINT_PROPAGATION_SECONDS);
    const graceMs = (spec.terminationGracePeriodSeconds ?? 30) * 1000;
    expect(graceMs).toBeGreaterThanOrEqual(pauseSeconds * 1000 + overlay.config(overlay.api).shutdownTimeoutMs + KILL_MARGIN_MS);
  });

  it('runs one pool thread per CPU of each worker limit, with memory for every thread heap', () => {
    for (const w of workers) {
      const container = w.spec.template.spec.containers[0];
      const cpuLimit = cpuCores(container.resources!.limits!.cpu);
      expect(Number.isInteger(cpuLimit)).toBe(true);
      const config = overlay.config(w);
      expect(config.workerThreads).toBe(cpuLimit);
      expect(container.resources!.requests).toEqual(container.resources!.limits); // Guaranteed QoS
      expect(memoryMiB(container.resources!.limits!.memory)).toBeGreaterThanOrEqual(config.workerThreads * config.workerMaxMemoryMb + MAIN_THREAD_HEADROOM_MIB);
    }
  });

  it('scales the API on CPU with a HorizontalPodAutoscaler, and each worker Deployment with one ScaledObject', () => {
    const hpas = overlay.ofKind<Hpa>('HorizontalPodAutoscaler');
    expect(hpas.map((h) => `${h.spec.scaleTargetRef.kind}/${h.spec.scaleTargetRef.name}`)).toEqual([`Deployment/${overlay.api.metadata.name}`]);
    expect(hpas[0].spec.metrics?.map((m) => m.resource?.name)).toEqual(['cpu']);
    const scaled = overlay.ofKind<ScaledObject>('ScaledObject');
    expect(scaled.map((s) => s.spec.scaleTargetRef.name).sort()).toEqual(workers.map((w) => w.metadata.name).sort());
    for (const s of scaled) expect(s.spec.scaleTargetRef.kind ?? 'Deployment').toBe('Deployment');
  });

  describe('KEDA triggers', () => {
    const prefix = () => overlay.config(workers[0]).redisPrefix;
    const apiService = () => {
      const services = overlay.ofKind<Service>('Service').filter((s) => selects(s.spec.selector, overlay.api.spec.template.metadata.labels));
      expect(services).toHaveLength(1);
      return services[0];
    };

    it.each(workers.map((w) => [w.metadata.name, w] as const))(
      '%s: scale on its queues\' backlog metric and BullMQ keys, one job per pool thread',
      (_, worker) => {
        const scaled = overlay.scaledObjectOf(worker)!;
        const threads = overlay.config(worker).workerThreads;
        const service = apiService();
        const apiPort = overlay.config(overlay.api).port;
        const apiContainer = overlay.api.spec.template.spec.containers[0];
        const targetOf = (p: Service['spec']['ports'][number]) =>
          typeof p.targetPort === 'string' ? apiContainer.ports?.find((c) => c.name === p.targetPort)?.containerPort : (p.targetPort ?? p.port);
        const servicePort = service.spec.ports.find((p) => targetOf(p) === apiPort)!;
        expect(servicePort).toBeDefined();
        const portPart = servicePort.port === 80 ? '' : `:${servicePort.port}`;
        const expected: Record<string, Record<string, string>> = {};
        for (const queue of overlay.queues(worker)) {
          expected[`backlog ${queue}`] = {
            url: `http://${service.metadata.name}.${overlay.namespace}.svc${portPart}/metrics`,
            format: 'prometheus',
            valueLocation: `${QUEUE_BACKLOG_METRIC}{queue="${queue}"}`,
            targetValue: String(threads),
            activationTargetValue: '0',
          };
          for (const state of ['waiting', 'prioritized'] as const) {
            expected[`${state} ${queue}`] = { listName: bullKey(prefix(), queue, BULL_STRUCTURES[state]), listLength: String(threads), activationListLength: '0' };
          }
          // Only a running worker promotes delayed jobs: a queue that may scale to zero must wake up for them.
          if ((scaled.spec.minReplicaCount ?? 0) === 0) {
            expected[`delayed ${queue}`] = { listName: bullKey(prefix(), queue, BULL_STRUCTURES.delayed), listLength: '1000000', activationListLength: '0' };
          }
        }
        const actual = Object.fromEntries(
          scaled.spec.triggers.map((t) => {
            const queue = /queue="([^"]+)"/.exec(t.metadata.valueLocation ?? '')?.[1] ?? /\{([^}]+)\}/.exec(t.metadata.listName ?? '')?.[1];
            return [`${t.name} ${queue}`, t.metadata];
          }),
        );
        expect(actual).toEqual(expected);
        for (const t of scaled.spec.triggers) {
          expect([t.type, t.metricType]).toEqual([t.name === 'backlog' ? 'metrics-api' : 'redis', 'AverageValue']);
        }
      },
    );

    it('reach the queue Redis through a TriggerAuthentication whose Secret exists or is in the example', () => {
      for (const scaled of overlay.ofKind<ScaledObject>('ScaledObject')) {
        for (const t of scaled.spec.triggers.filter((t) => t.type === 'redis')) {
          expect(t.metadata.address ?? t.metadata.password).toBeUndefined(); // never in the ScaledObject itself
          const auth = overlay.ofKind<TriggerAuthentication>('TriggerAuthentication').find((a) => a.metadata.name === t.authenticationRef?.name);
          expect(auth).toBeDefined();
          const refs = auth!.spec.secretTargetRef ?? [];
          expect(refs.map((r) => r.parameter)).toEqual(expect.arrayContaining(['address', 'password']));
          for (const ref of refs) expect(overlay.secret(ref.name)).toBeDefined();
          const address = overlay.secret(refs.find((r) => r.parameter === 'address')!.name)!.address;
          expect(address).toMatch(/^[\w.-]+:\d+$/);
        }
      }
    });

    it('leave the worker count to KEDA: no HorizontalPodAutoscaler and no replicas on a scaled Deployment', () => {
      const hpaTargets = overlay.ofKind<Hpa>('HorizontalPodAutoscaler').map((h) => h.spec.scaleTargetRef.name);
      for (const scaled of overlay.ofKind<ScaledObject>('ScaledObject')) {
        expect(hpaTargets).not.toContain(scaled.spec.scaleTargetRef.name);
        const target = overlay.ofKind<Workload>('Deployment').find((d) => d.metadata.name === scaled.spec.scaleTargetRef.name);
        expect(target?.spec.replicas).toBeUndefined();
      }
    });
  });
});

describe('docker/kubernetes/overlays/dev: a working stack on a laptop cluster', () => {
  const dev = overlays.dev;
  const redisWorkload = (host: string) => {
    const service = dev.ofKind<Service>('Service').find((s) => s.metadata.name === host);
    const selected = service && dev.workloads.filter((w) => selects(service.spec.selector, w.spec.template.metadata.labels));
    expect(selected).toHaveLength(1);
    return selected![0];
  };
  const args = (w: Workload) => (w.spec.template.spec.containers[0].args ?? []).join(' ');

  it('brings a single-replica queue Redis: a StatefulSet with an append-only file on a volume and noeviction', () => {
    const queue = redisWorkload(new URL(redisUrlOf(dev.config(dev.api).queueRedis)).hostname);
    expect(queue.kind).toBe('StatefulSet');
    expect(queue.spec.replicas).toBe(1);
    expect(args(queue)).toMatch(/--appendonly yes\b/);
    expect(args(queue)).toMatch(/--maxmemory-policy noeviction\b/);
    const claims = (queue.spec as { volumeClaimTemplates?: { metadata: { name: string } }[] }).volumeClaimTemplates ?? [];
    const data = queue.spec.template.spec.containers[0].volumeMounts?.find((m) => m.mountPath === '/data');
    expect(claims.map((c) => c.metadata.name)).toContain(data?.name);
  });

  it('brings a separate cache Redis bounded by maxmemory with allkeys-lru', () => {
    const config = dev.config(dev.api);
    expect(redisUrlOf(config.cacheRedis)).not.toBe(redisUrlOf(config.queueRedis));
    const cache = redisWorkload(new URL(redisUrlOf(config.cacheRedis)).hostname);
    expect(args(cache)).toMatch(/--maxmemory-policy allkeys-lru\b/);
    const maxMiB = memoryMiB(/--maxmemory (\d+)mb\b/.exec(args(cache))![1] + 'Mi');
    expect(maxMiB).toBeLessThan(memoryMiB(cache.spec.template.spec.containers[0].resources!.limits!.memory));
  });

  it("points every app and KEDA at the queue Redis, KEDA by the Service's full name (it runs in its own namespace)", () => {
    const hosts = [dev.api, ...dev.apps('worker')].map((w) => new URL(redisUrlOf(dev.config(w).queueRedis)).hostname);
    expect(new Set(hosts).size).toBe(1);
    const auth = dev.ofKind<TriggerAuthentication>('TriggerAuthentication')[0];
    const address = dev.secret(auth.spec.secretTargetRef!.find((r) => r.parameter === 'address')!.name)!.address;
    expect(address).toBe(`${hosts[0]}.${dev.namespace}.svc:6379`);
  });

  it('runs the images `docker compose build` tags, without pulling them, and the API without keys', () => {
    const compose = readYaml('docker/compose.yaml')[0] as { services: Record<string, { image?: string; build?: { target: string } }> };
    const composeImage = (target: string) => Object.values(compose.services).find((s) => s.build?.target === target)?.image;
    for (const app of [dev.api, ...dev.apps('worker')]) {
      const container = app.spec.template.spec.containers[0];
      expect(container.image).toBe(composeImage(app.spec.template.metadata.labels[COMPONENT]));
      expect(container.imagePullPolicy).toBe('IfNotPresent');
    }
    expect(dev.env(dev.api).ALLOW_UNAUTHENTICATED).toBe('true');
    expect(dev.ofKind('Namespace').map((n) => n.metadata.name)).toEqual([dev.namespace]);
  });
});

describe('docker/kubernetes/overlays/prod: external Redis, more replicas, disruption budgets, network policies', () => {
  const { prod, dev } = overlays;
  const apps = () => [prod.api, ...prod.apps('worker')];

  it('runs no Redis and renders no Secret: the Secrets of secret.example.yaml are yours to create', () => {
    expect(prod.workloads.map(where).sort()).toEqual(apps().map(where).sort());
    expect(prod.ofKind('Secret')).toEqual([]);
    expect(prod.examples.length).toBeGreaterThan(0);
  });

  it('runs the API with API keys from a Secret, and pinned images', () => {
    const env = prod.env(prod.api);
    expect(prod.config(prod.api).apiKeys.length).toBeGreaterThan(0);
    expect(env.ALLOW_UNAUTHENTICATED ?? 'false').toBe('false');
    for (const app of apps()) expect(app.spec.template.spec.containers[0].image).toMatch(/^[\w.-]+\/[\w./-]+:(?!latest$)[\w.-]+$/);
  });

  it('runs more replicas than dev', () => {
    const hpa = (o: Overlay) => o.ofKind<Hpa>('HorizontalPodAutoscaler')[0].spec;
    expect(hpa(prod).minReplicas!).toBeGreaterThan(hpa(dev).minReplicas!);
    for (const scaled of prod.ofKind<ScaledObject>('ScaledObject')) {
      const inDev = dev.ofKind<ScaledObject>('ScaledObject').find((s) => s.metadata.name === scaled.metadata.name)!;
      expect(scaled.spec.maxReplicaCount!).toBeGreaterThan(inDev.spec.maxReplicaCount!);
    }
  });

  it('has a PodDisruptionBudget for each Deployment, selecting its pods only', () => {
    const pdbs = prod.ofKind<Pdb>('PodDisruptionBudget');
    for (const app of apps()) {
      const covering = pdbs.filter((p) => selects(p.spec.selector.matchLabels, app.spec.template.metadata.labels));
      expect({ app: where(app), pdbs: covering.length }).toEqual({ app: where(app), pdbs: 1 });
    }
    expect(pdbs).toHaveLength(apps().length);
  });

  describe('NetworkPolicies', () => {
    const policies = () => prod.ofKind<NetworkPolicy & K8sObject>('NetworkPolicy');
    const from = (namespace: string, labels: Record<string, string> = { app: 'anything' }) => ({
      pod: { namespace, labels, ports: {} },
      namespaceLabels: { 'kubernetes.io/metadata.name': namespace },
    });
    const outside = { outside: true } as const;
    const appPort = (w: Workload) => (w === prod.api ? prod.config(w).port : prod.config(w).workerPort);

    it("let only the API's port be reached from outside the namespace, and probes and metrics from monitoring", () => {
      for (const app of apps()) {
        const to = { pod: prod.pod(app), namespaceLabels: { 'kubernetes.io/metadata.name': prod.namespace } };
        const port = appPort(app);
        const isApi = app === prod.api;
        expect({ app: where(app), fromElsewhere: allows(policies(), from('elsewhere'), to, port) }).toEqual({ app: where(app), fromElsewhere: isApi });
        expect({ app: where(app), fromOutside: allows(policies(), outside, to, port) }).toEqual({ app: where(app), fromOutside: isApi });
        expect(allows(policies(), from('monitoring'), to, port)).toBe(true);
        expect(allows(policies(), from('monitoring'), to, port + 1)).toBe(false);
      }
    });

    it('let only the API and the workers reach Redis, and nothing else leave the namespace but DNS', () => {
      const apiAndWorkers = apps().map((a) => ({ pod: prod.pod(a), namespaceLabels: {} }));
      const stranger = from(prod.namespace, { 'app.kubernetes.io/name': 'something-else' });
      for (const source of apiAndWorkers) {
        for (const port of [6379, 26379]) expect(allows(policies(), source, outside, port)).toBe(true);
        expect(allows(policies(), source, outside, 53, 'UDP')).toBe(true);
        expect(allows(policies(), source, outside, 443)).toBe(false);
      }
      for (const port of [6379, 26379, 443]) expect(allows(policies(), stranger, outside, port)).toBe(false);
    });

    it('every policy selects some pod of the namespace or all of them', () => {
      for (const policy of policies()) {
        const selectsAll = Object.keys(policy.spec.podSelector).length === 0;
        expect(selectsAll || apps().some((a) => matches(policy.spec.podSelector, a.spec.template.metadata.labels))).toBe(true);
      }
    });
  });
});

function readYamlText(text: string): unknown[] {
  return parseAllDocuments(text).map((doc) => (doc as { toJS(): unknown }).toJS()).filter((doc) => doc !== null);
}
