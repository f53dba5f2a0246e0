import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { QUEUE_BACKLOG_METRIC } from '../apps/api/src/jobs/queue.metrics';
import { clientAddressOf, TrustedProxies } from '../apps/api/src/security/client-address';
import { JobRegistry } from '@app/jobs';
import { BULL_STRUCTURES, bullKey } from '@app/queue';
import { AWS_SDK_ENV, readAcceptedEnv, readRepoFile, readWorkerHandBackGraceMs, redisUrlOf, ROOT } from './deploy/app-source';
import { CONNECTION_METADATA, expectedConnection, kedaRedisConnection } from './deploy/keda';
import { applyPatch, kustomizeCommand, Manifest, nameSuffix } from './deploy/kustomize';
import { cpuCores, K8sObject, memoryMiB, readYaml, selects, Workload } from './deploy/manifests';
import { allows, Endpoint, matches, NetworkPolicy } from './deploy/network-policy';
import { COMPONENT, Hpa, Overlay, Pdb, ScaledObject, Service, ServiceMonitor, TriggerAuthentication } from './deploy/overlay';
import { schemaErrors, unknownFieldErrors } from './deploy/schemas';
import { QUEUE_REDIS_ARGS } from './support/redis';

/**
 * docker/kubernetes against the code it runs: both overlays, and prod with each opt-in component,
 * rendered (test/deploy/kustomize.ts), every object checked against the Kubernetes, KEDA and
 * Prometheus Operator schemas, and the invariants the apps rely on. No cluster needed.
 * test/keda.e2e-spec.ts evaluates the KEDA triggers against a real API and Redis.
 */

const DIR = 'docker/kubernetes';
/** prod with each opt-in component, composed as you would by listing it in prod's `components:`. */
const COMPOSITIONS = ['prod-redis-sentinel', 'prod-redis-cluster', 'prod-webhooks', 'prod-aws-s3'] as const;
const OVERLAYS = ['dev', 'prod', ...COMPOSITIONS] as const;
type OverlayName = (typeof OVERLAYS)[number];
const PRODUCTION = ['prod', ...COMPOSITIONS] as const;

/** Besides the pool threads' heaps: the main thread, young generations and buffers. */
const MAIN_THREAD_HEADROOM_MIB = 512;
/** Time between an app giving up on its drain and being killed anyway. */
const KILL_MARGIN_MS = 5_000;
/** How long a removed endpoint takes to reach kube-proxy and ingresses: the API's minimum preStop pause. */
const ENDPOINT_PROPAGATION_SECONDS = 3;
/** OTLP/HTTP, the only protocol the apps export traces with. */
const OTLP_HTTP_PORT = 4318;
const QUEUES = JobRegistry.forConfig({ chaosJobs: false }).workerQueues();
const accepted = readAcceptedEnv();

const overlays = Object.fromEntries(
  OVERLAYS.map((name) => [name, (COMPOSITIONS as readonly string[]).includes(name) ? new Overlay(name, `test/fixtures/kubernetes/${name}`) : new Overlay(name)]),
) as Record<OverlayName, Overlay>;
const where = (o: K8sObject) => `${o.kind}/${o.metadata.name}`;
const resourcesOf = (dir: string) => (parse(readRepoFile(`${dir}/kustomization.yaml`)) as { resources?: string[] }).resources ?? [];
const usesComponent = (overlay: Overlay, component: string) => overlay.dirs.includes(`${DIR}/components/${component}`);

describe('test/deploy/kustomize.ts (the renderer)', () => {
  const command = kustomizeCommand();

  // CI's machines have kubectl; elsewhere this comparison is reported as skipped, never passed.
  (command ? it : it.skip).each(OVERLAYS)(
    `renders %s as the real kustomize does (${command?.join(' ') ?? 'no kustomize or kubectl on PATH'})`,
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

  it('applies JSON 6902 patches and refuses a path that is not there or a failed test, as kustomize does', () => {
    const object: Manifest = { apiVersion: 'v1', kind: 'X', metadata: { name: 'x' }, spec: { list: [1, 2], n: 1 } };
    expect(
      applyPatch(object, [
        { op: 'test', path: '/spec/list/1', value: 2 },
        { op: 'add', path: '/spec/list/-', value: 3 },
        { op: 'replace', path: '/spec/n', value: 2 },
        { op: 'add', path: '/spec/new', value: { a: 1 } },
        { op: 'remove', path: '/spec/list/0' },
        { op: 'test', path: '/spec/new', value: { a: 1 } },
      ]).spec,
    ).toEqual({ list: [2, 3], n: 2, new: { a: 1 } });
    expect(() => applyPatch(object, [{ op: 'replace', path: '/spec/missing', value: 1 }])).toThrow(/nothing there/);
    expect(() => applyPatch(object, [{ op: 'add', path: '/spec/no/deeper', value: 1 }])).toThrow(/does not exist/);
    expect(() => applyPatch(object, [{ op: 'test', path: '/spec/n', value: 2 }])).toThrow(/1 is not 2/);
  });
});

describe.each(OVERLAYS)('docker/kubernetes/overlays/%s', (name) => {
  const overlay = overlays[name];
  const workers = overlay.apps('worker');

  it('renders every manifest of the overlay, the base and its components (the Secret examples excepted)', () => {
    expect(overlay.dirs).toContain(`${DIR}/base`);
    for (const dir of overlay.dirs) {
      const files = readdirSync(join(ROOT, dir)).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml' && !f.includes('.example.'));
      expect({ dir, resources: resourcesOf(dir).filter((r) => !r.startsWith('..')).sort() }).toEqual({ dir, resources: files.sort() });
    }
  });

  it('every object is valid against the Kubernetes, KEDA and Prometheus Operator schemas', () => {
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
      expect(Object.keys(env).filter((n) => !accepted.names.has(n) && !AWS_SDK_ENV.has(n))).toEqual([]);
      expect(env.CHAOS_JOBS ?? 'false').toBe('false');
      expect(env.DEMO ?? 'false').toBe('false');
    }
  });

  it("names each Deployment's traces after it: OTEL_SERVICE_NAME in its own env, never in a shared ConfigMap", () => {
    for (const app of [overlay.api, ...workers]) {
      const own = app.spec.template.spec.containers[0].env?.find((e) => e.name === 'OTEL_SERVICE_NAME');
      expect({ app: where(app), own: own?.value, parsed: overlay.config(app).otel.serviceName }).toEqual({
        app: where(app),
        own: app.metadata.name,
        parsed: app.metadata.name,
      });
    }
    for (const map of overlay.ofKind<K8sObject & { data?: Record<string, string> }>('ConfigMap')) {
      expect({ map: where(map), keys: Object.keys(map.data ?? {}).filter((k) => k.startsWith('OTEL_SERVICE_NAME')) }).toEqual({ map: where(map), keys: [] });
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
    // The API's Service that routes traffic (a headless one, like components/monitoring's, has no port of its own).
    const apiService = () => {
      const services = overlay
        .ofKind<Service>('Service')
        .filter((s) => s.spec.clusterIP !== 'None' && selects(s.spec.selector, overlay.api.spec.template.metadata.labels));
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
        // What each trigger counts; where it connects is the next test's.
        const counted = (metadata: Record<string, string>) => Object.fromEntries(Object.entries(metadata).filter(([key]) => !CONNECTION_METADATA.has(key)));
        const actual = Object.fromEntries(
          scaled.spec.triggers.map((t) => {
            const queue = /queue="([^"]+)"/.exec(t.metadata.valueLocation ?? '')?.[1] ?? /\{([^}]+)\}/.exec(t.metadata.listName ?? '')?.[1];
            return [`${t.name} ${queue}`, t.type === 'metrics-api' ? t.metadata : counted(t.metadata)];
          }),
        );
        expect(actual).toEqual(expected);
        const redisType = expectedConnection(overlay.config(worker).queueRedis, overlay.namespace).type;
        for (const t of scaled.spec.triggers) {
          expect([t.name, t.type, t.metricType]).toEqual([t.name, t.name === 'backlog' ? 'metrics-api' : redisType, 'AverageValue']);
        }
      },
    );

    it.each(workers.map((w) => [w.metadata.name, w] as const))(
      '%s: its redis triggers reach the queue Redis the apps use, logged in as they are (resolved as KEDA does)',
      (_, worker) => {
        const scaled = overlay.scaledObjectOf(worker)!;
        const triggers = scaled.spec.triggers.filter((t) => t.type !== 'metrics-api');
        expect(triggers.length).toBeGreaterThan(0);
        const expected = expectedConnection(overlay.config(worker).queueRedis, overlay.namespace);
        for (const t of triggers) {
          // Credentials and addresses come from Secrets and the apps' config, never the ScaledObject itself.
          expect([t.name, t.metadata.address ?? t.metadata.addresses ?? t.metadata.username ?? t.metadata.password]).toEqual([t.name, undefined]);
          expect(t.authenticationRef).toBeDefined();
          expect({ trigger: t.name, ...kedaRedisConnection(overlay, scaled, t) }).toEqual({ trigger: t.name, ...expected });
        }
      },
    );

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
    // The settings the tests and the bench run their Redis with (test/support/redis.ts).
    expect(args(queue)).toContain(QUEUE_REDIS_ARGS.join(' '));
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

  it('keeps job files in one volume that the API and every worker mount at /blobs, as a file blob store production accepts', () => {
    const claims = dev.ofKind<K8sObject & { spec: { accessModes: string[] } }>('PersistentVolumeClaim');
    expect(claims.map((c) => [c.metadata.name, c.spec.accessModes])).toEqual([['nest-offload-blobs', ['ReadWriteOnce']]]);
    for (const app of [dev.api, ...dev.apps('worker')]) {
      expect([where(app), dev.config(app).blobStore]).toEqual([where(app), { kind: 'file', dir: '/blobs' }]);
      const pod = app.spec.template.spec;
      const mount = pod.containers[0].volumeMounts?.find((m) => m.mountPath === '/blobs');
      const claim = pod.volumes?.find((v) => v.name === mount?.name)?.persistentVolumeClaim?.claimName;
      // The apps' group owns what the volume holds, where the storage class honours fsGroup.
      expect({ app: where(app), claim, fsGroup: pod.securityContext?.fsGroup }).toEqual({ app: where(app), claim: 'nest-offload-blobs', fsGroup: pod.securityContext?.runAsGroup });
    }
  });
});

describe.each(PRODUCTION)('%s: external Redis, more replicas, disruption budgets, network policies, monitoring', (name) => {
  const prod = overlays[name];
  const { dev } = overlays;
  const apps = () => [prod.api, ...prod.apps('worker')];
  const appPort = (w: Workload) => (w === prod.api ? prod.config(w).port : prod.config(w).workerPort);

  it('runs no Redis and renders no Secret: the Secrets of the secret.example.yaml files are yours to create', () => {
    expect(prod.workloads.map(where).sort()).toEqual(apps().map(where).sort());
    expect(prod.ofKind('Secret')).toEqual([]);
    expect(prod.examples.length).toBeGreaterThan(0);
  });

  it('runs the API with client and admin keys from a Secret, its docs behind them, the queue dashboard off, and pinned images', () => {
    const env = prod.env(prod.api);
    const config = prod.config(prod.api);
    expect(config.apiKeys.length).toBeGreaterThan(0);
    expect(config.adminApiKeys.length).toBeGreaterThan(0);
    expect(prod.env(prod.api).ADMIN_API_KEYS).toBe(prod.secret('nest-offload-api-keys')?.ADMIN_API_KEYS);
    // Client addresses come from the ingress controller's X-Forwarded-For (networkpolicy.yaml admits
    // only it, monitoring and KEDA): the pods' range at most, and one entry, so behind a node's SNAT
    // the client is that node, never what the client wrote to its left.
    expect(config.trustedProxies.length).toBeGreaterThan(0);
    expect(config.trustedProxies.map((r) => r.prefix >= (r.family === 'ipv4' ? 16 : 64))).not.toContain(false);
    const proxies = new TrustedProxies(config.trustedProxies, config.trustedProxyHops);
    expect(clientAddressOf(config.trustedProxies[0].address, '203.0.113.7, 10.20.0.5', proxies)).toBe('10.20.0.5');
    expect(env.ALLOW_UNAUTHENTICATED ?? 'false').toBe('false');
    expect({ docs: config.apiDocs, dashboard: config.queueDashboard, readOnly: config.queueDashboardReadOnly }).toEqual({ docs: true, dashboard: false, readOnly: true });
    for (const app of apps()) expect(app.spec.template.spec.containers[0].image).toMatch(/^[\w.-]+\/[\w./-]+:(?!latest$)[\w.-]+$/);
  });

  it('keeps the Redis password out of every URL and in a Secret key of its own, which the apps and KEDA read', () => {
    for (const app of apps()) {
      const { queueRedis, cacheRedis } = prod.config(app);
      for (const target of [queueRedis, cacheRedis]) {
        if (target.kind === 'standalone') expect(new URL(target.url).password).toBe('');
        expect(target.password).toBe(prod.secret('nest-offload-redis')?.REDIS_PASSWORD);
      }
    }
    expect(prod.secret('nest-offload-redis')?.REDIS_PASSWORD).toBeTruthy();
    for (const auth of prod.ofKind<TriggerAuthentication>('TriggerAuthentication')) {
      expect(auth.spec.secretTargetRef?.find((r) => r.parameter === 'password')).toMatchObject({ name: 'nest-offload-redis', key: 'REDIS_PASSWORD' });
    }
  });

  it('gives the API and every worker BLOB_STORE_URL, a bucket, and the S3 credentials from a Secret, none in the URL', () => {
    const secret = prod.secret('nest-offload-blob-store')!;
    expect(Object.keys(secret).sort()).toEqual(['AWS_ACCESS_KEY_ID', 'AWS_REGION', 'AWS_SECRET_ACCESS_KEY', 'BLOB_STORE_URL']);
    for (const app of apps()) {
      expect(app.spec.template.spec.containers[0].envFrom).toContainEqual({ secretRef: { name: 'nest-offload-blob-store' } });
      expect(prod.config(app).blobStore).toMatchObject({ kind: 's3', bucket: expect.any(String) });
      const env = prod.env(app);
      for (const key of Object.keys(secret)) expect([where(app), key, env[key]]).toEqual([where(app), key, secret[key]]);
      expect(new URL(env.BLOB_STORE_URL).password + new URL(env.BLOB_STORE_URL).username).toBe('');
    }
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
    const webhooks = usesComponent(prod, 'webhooks');
    const awsS3 = usesComponent(prod, 'aws-s3');

    it("let the API's port be reached only from the ingress controller, monitoring and KEDA, and the workers' only from monitoring", () => {
      // KEDA's metrics-api triggers read the API's /metrics through its Service, from KEDA's namespace.
      const kedaReadsApi = prod.ofKind<ScaledObject>('ScaledObject').some((s) => s.spec.triggers.some((t) => t.type === 'metrics-api'));
      expect(kedaReadsApi).toBe(true);
      for (const app of apps()) {
        const to = { pod: prod.pod(app), namespaceLabels: { 'kubernetes.io/metadata.name': prod.namespace } };
        const port = appPort(app);
        const isApi = app === prod.api;
        const reach = (source: Endpoint) => allows(policies(), source, to, port);
        expect({
          app: where(app),
          ingressController: reach(from('ingress-nginx')),
          keda: reach(from('keda')),
          monitoring: reach(from('monitoring')),
          elsewhere: reach(from('elsewhere')),
          sameNamespace: reach(from(prod.namespace)),
          outside: reach(outside),
          outsideAddress: reach({ outside: true, ip: '203.0.113.9' }),
        }).toEqual({
          app: where(app),
          ingressController: isApi,
          keda: isApi,
          monitoring: true,
          elsewhere: false,
          sameNamespace: false,
          outside: false,
          outsideAddress: false,
        });
        expect(allows(policies(), from('monitoring'), to, port + 1)).toBe(false);
      }
    });

    it('let Prometheus in monitoring scrape every pod where the ServiceMonitor points it: the headless Service\'s port on each pod', () => {
      const [monitor, ...others] = prod.ofKind<ServiceMonitor>('ServiceMonitor');
      expect(others).toEqual([]);
      // Without a namespaceSelector, a ServiceMonitor selects Services of its own namespace.
      const services = prod
        .ofKind<Service>('Service')
        .filter((s) => s.metadata.namespace === monitor.metadata.namespace && matches(monitor.spec.selector, s.metadata.labels ?? {}));
      expect(services.map(where)).toEqual(['Service/nest-offload-metrics']);
      const [service] = services;
      expect(service.spec.clusterIP).toBe('None'); // Prometheus connects to each pod, by the target port
      for (const endpoint of monitor.spec.endpoints) {
        const servicePort = service.spec.ports.find((p) => p.name === endpoint.port)!;
        expect(servicePort).toBeDefined();
        for (const app of apps()) {
          expect(selects(service.spec.selector, app.spec.template.metadata.labels)).toBe(true);
          const pod = prod.pod(app);
          const port = typeof servicePort.targetPort === 'string' ? pod.ports[servicePort.targetPort] : (servicePort.targetPort ?? servicePort.port);
          const to = { pod, namespaceLabels: { 'kubernetes.io/metadata.name': prod.namespace } };
          expect({ app: where(app), endpoint: endpoint.path, port, scrapable: allows(policies(), from('monitoring'), to, port) }).toEqual({
            app: where(app),
            endpoint: '/metrics',
            port: appPort(app),
            scrapable: true,
          });
        }
      }
    });

    const https = awsS3 ? 'the API and the workers HTTPS (the blob store outside the cluster)' : webhooks ? 'the API alone HTTPS (webhooks)' : 'nothing else leaves (no webhook egress)';
    it(`let only the API and the workers reach DNS, Redis in the redis namespace, the blob store in minio and a trace collector in monitoring; ${https}`, () => {
      const stranger = from(prod.namespace, { 'app.kubernetes.io/name': 'something-else' });
      for (const app of apps()) {
        const source = { pod: prod.pod(app), namespaceLabels: {} };
        for (const port of [6379, 26379]) {
          expect({ app: where(app), port, redis: allows(policies(), source, from('redis'), port) }).toEqual({ app: where(app), port, redis: true });
          expect({ app: where(app), port, elsewhere: allows(policies(), source, from('elsewhere'), port) }).toEqual({ app: where(app), port, elsewhere: false });
          expect({ app: where(app), port, outside: allows(policies(), source, { outside: true, ip: '203.0.113.9' }, port) }).toEqual({ app: where(app), port, outside: false });
        }
        expect(allows(policies(), source, from('redis'), 80)).toBe(false);
        expect(allows(policies(), source, outside, 53, 'UDP')).toBe(true);
        expect(allows(policies(), source, from('monitoring'), OTLP_HTTP_PORT)).toBe(true);
        // The blob store: a MinIO in the minio namespace (secret.example.yaml), and nothing else on its port.
        expect({ app: where(app), store: allows(policies(), source, from('minio'), 9000) }).toEqual({ app: where(app), store: true });
        expect(allows(policies(), source, from('elsewhere'), 9000)).toBe(false);
        expect(allows(policies(), source, outside, 9000)).toBe(false);
        expect(allows(policies(), source, from('elsewhere'), OTLP_HTTP_PORT)).toBe(false);
        expect({ app: where(app), https: allows(policies(), source, { outside: true, ip: '93.184.215.14' }, 443) }).toEqual({
          app: where(app),
          https: awsS3 || (webhooks && app === prod.api),
        });
        // Plain HTTP leaves for nowhere (components/aws-s3's port 80 is EKS Pod Identity's agent alone: below).
        expect(allows(policies(), source, { outside: true, ip: '93.184.215.14' }, 80)).toBe(false);
      }
      for (const port of [6379, 26379, 443, OTLP_HTTP_PORT]) expect(allows(policies(), stranger, outside, port)).toBe(false);
      expect(allows(policies(), stranger, from('minio'), 9000)).toBe(false);
      for (const port of [6379, 26379]) expect(allows(policies(), stranger, from('redis'), port)).toBe(false);
    });

    it(`let ${awsS3 ? '' : 'no '}app reach a blob store outside the cluster (components/aws-s3): public addresses on 443, never the private ranges or cloud metadata`, () => {
      const stranger = from(prod.namespace, { 'app.kubernetes.io/name': 'something-else' });
      const at = (ip: string) => ({ outside: true, ip }) as const;
      for (const app of apps()) {
        const source = { pod: prod.pod(app), namespaceLabels: {} };
        // An S3 address of eu-west-1 (IPv4 and IPv6), and, with EKS Pod Identity, the node's credentials agent.
        const reach = {
          s3: allows(policies(), source, at('52.218.0.10'), 443),
          s3v6: allows(policies(), source, at('2a05:d07a:a000::1'), 443),
          podIdentityAgent: allows(policies(), source, at('169.254.170.23'), 80),
        };
        expect({ app: where(app), ...reach }).toEqual({
          app: where(app),
          s3: awsS3 || (webhooks && app === prod.api),
          s3v6: awsS3 || (webhooks && app === prod.api),
          podIdentityAgent: awsS3,
        });
        for (const [ip, port] of [['169.254.169.254', 80], ['169.254.169.254', 443], ['10.1.2.3', 443], ['192.168.1.1', 443], ['fd00::1', 443], ['52.218.0.10', 80]] as const) {
          expect({ app: where(app), ip, port, reachable: allows(policies(), source, at(ip), port) }).toEqual({ app: where(app), ip, port, reachable: false });
        }
      }
      expect(allows(policies(), stranger, at('52.218.0.10'), 443)).toBe(false);
    });

    it('every policy selects some pod of the namespace or all of them', () => {
      for (const policy of policies()) {
        const selectsAll = Object.keys(policy.spec.podSelector).length === 0;
        expect(selectsAll || apps().some((a) => matches(policy.spec.podSelector, a.spec.template.metadata.labels))).toBe(true);
      }
    });
  });
});

describe.each([
  ['prod-redis-sentinel', 'sentinel'],
  ['prod-redis-cluster', 'cluster'],
] as const)('%s: the queue and cache Redis fail over by themselves', (name, kind) => {
  const overlay = overlays[name];
  const apps = () => [overlay.api, ...overlay.apps('worker')];

  it(`points every app at ${kind === 'sentinel' ? 'Sentinel-managed' : 'clustered'} queue and cache Redis, named in the shared config, logged in from the Secret`, () => {
    const secret = overlay.secret('nest-offload-redis')!;
    // The Secret holds the credentials only: a URL beside the Sentinels or seeds would stop the apps.
    expect(Object.keys(secret).sort()).toEqual(['REDIS_PASSWORD', 'REDIS_USERNAME']);
    for (const app of apps()) {
      const { queueRedis, cacheRedis } = overlay.config(app);
      expect([queueRedis.kind, cacheRedis.kind]).toEqual([kind, kind]);
      expect([queueRedis.username, queueRedis.password]).toEqual([secret.REDIS_USERNAME, secret.REDIS_PASSWORD]);
      const hosts = queueRedis.kind === 'sentinel' ? queueRedis.sentinels : queueRedis.kind === 'cluster' ? queueRedis.nodes : [];
      // KEDA resolves them from its own namespace.
      for (const { host } of hosts) expect(host).toMatch(/\.svc(\.|$)/);
    }
  });

  it('answers 202 only once a replica has the job (REDIS_MIN_REPLICAS_ACK), so a failover after a 202 loses nothing', () => {
    expect(overlay.config(overlay.api).redisMinReplicasAck).toBeGreaterThanOrEqual(1);
  });

  it("lets every app reach each of its Redis hosts, in the namespace the host's name says, through the NetworkPolicies", () => {
    const policies = overlay.ofKind<NetworkPolicy & K8sObject>('NetworkPolicy');
    for (const app of apps()) {
      const source = { pod: overlay.pod(app), namespaceLabels: {} };
      const { queueRedis, cacheRedis } = overlay.config(app);
      for (const target of [queueRedis, cacheRedis]) {
        const hosts = target.kind === 'sentinel' ? target.sentinels : target.kind === 'cluster' ? target.nodes : [];
        for (const { host, port } of hosts) {
          const namespace = /\.([a-z0-9-]+)\.svc(\.|$)/.exec(host)![1];
          const redisPod = { pod: { namespace, labels: { app: 'redis' }, ports: {} }, namespaceLabels: { 'kubernetes.io/metadata.name': namespace } };
          expect({ app: where(app), host, reachable: allows(policies, source, redisPod, port) }).toEqual({ app: where(app), host, reachable: true });
        }
      }
    }
  });
});

function readYamlText(text: string): unknown[] {
  return parseAllDocuments(text).map((doc) => (doc as { toJS(): unknown }).toJS()).filter((doc) => doc !== null);
}
