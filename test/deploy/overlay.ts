import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { selectQueues } from '../../apps/worker/src/processor/worker-queues';
import { Config, loadConfig } from '@app/config';
import { JobRegistry } from '@app/jobs';
import { ROOT } from './app-source';
import { Manifest, render } from './kustomize';
import { cpuCores, K8sObject, readYaml, Workload } from './manifests';
import { LabelSelector, Pod } from './network-policy';

/** A Deployment is one of the apps' when its pods carry this label; their component says which app. */
export const APP_LABEL = 'app.kubernetes.io/name';
export const COMPONENT = 'app.kubernetes.io/component';

const registry = JobRegistry.forConfig({ chaosJobs: false });

// The parts of the Kubernetes and KEDA objects the tests read.
export type Secret = K8sObject & { data?: Record<string, string>; stringData?: Record<string, string> };
export type ScaledObject = K8sObject & {
  spec: {
    scaleTargetRef: { name: string; kind?: string };
    minReplicaCount?: number;
    maxReplicaCount?: number;
    triggers: { type: string; name?: string; metricType?: string; metadata: Record<string, string>; authenticationRef?: { name: string; kind?: string } }[];
  };
};
export type TriggerAuthentication = K8sObject & {
  spec: { secretTargetRef?: { parameter: string; name: string; key: string }[]; env?: { parameter: string; name: string; containerName?: string }[] };
};
export type Hpa = K8sObject & {
  spec: { scaleTargetRef: { kind: string; name: string }; minReplicas?: number; maxReplicas: number; metrics?: { type: string; resource?: { name: string } }[] };
};
export type Service = K8sObject & {
  spec: { selector: Record<string, string>; clusterIP?: string; ports: { name?: string; port: number; targetPort?: number | string }[] };
};
export type ServiceMonitor = K8sObject & { spec: { selector: LabelSelector; endpoints: { port?: string; path?: string }[] } };
export type Pdb = K8sObject & { spec: { selector: { matchLabels: Record<string, string> }; maxUnavailable?: number | string; minAvailable?: number | string } };

/** One overlay of docker/kubernetes (or a composition of one with components), rendered, with what the apps in it would start with. */
export class Overlay {
  readonly objects: Manifest[];
  /** The kustomization directories it is built from: the overlay, its bases and its components. */
  readonly dirs: string[];
  /**
   * Secrets the overlay expects you to create: the secret.example.yaml files of those directories,
   * never applied. A component's example of a Secret replaces the overlay's (it says what changes).
   */
  readonly examples: Secret[];

  constructor(
    readonly name: string,
    readonly dir = `docker/kubernetes/overlays/${name}`,
  ) {
    ({ objects: this.objects, dirs: this.dirs } = render(dir));
    const byName = new Map<string, Secret>();
    for (const example of this.dirs.map((d) => `${d}/secret.example.yaml`).filter((file) => existsSync(join(ROOT, file)))) {
      for (const secret of readYaml(example) as Secret[]) byName.set(secret.metadata.name, secret);
    }
    this.examples = [...byName.values()];
  }

  ofKind<T extends K8sObject>(kind: string): T[] {
    return this.objects.filter((o) => o.kind === kind) as unknown as T[];
  }

  get namespace(): string {
    return this.ofKind('Deployment')[0].metadata.namespace!;
  }

  get workloads(): Workload[] {
    return [...this.ofKind<Workload>('Deployment'), ...this.ofKind<Workload>('StatefulSet')];
  }

  /** The Deployments of the apps, by their pods' component label: `api` or `worker`. */
  apps(component: 'api' | 'worker'): Workload[] {
    return this.ofKind<Workload>('Deployment').filter(
      (d) => d.spec.template.metadata.labels[APP_LABEL] === 'nest-offload' && d.spec.template.metadata.labels[COMPONENT] === component,
    );
  }

  get api(): Workload {
    const [api, ...others] = this.apps('api');
    if (!api || others.length) throw new Error(`${this.name}: expected one API Deployment`);
    return api;
  }

  /** A Secret's values: rendered by the overlay, or in its example of what you create. */
  secret(name: string): Record<string, string> | undefined {
    const rendered = this.ofKind<Secret>('Secret').find((s) => s.metadata.name === name);
    if (rendered) return Object.fromEntries(Object.entries(rendered.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]));
    return this.examples.find((s) => s.metadata.name === name)?.stringData;
  }

  /** A rendered ConfigMap's values. */
  configMap(name: string): Record<string, string> | undefined {
    const map = this.ofKind<K8sObject & { data?: Record<string, string> }>('ConfigMap').find((c) => c.metadata.name === name);
    return map && (map.data ?? {});
  }

  /** The environment a container starts with: envFrom in order, then env (key references and resourceFieldRef resolved). */
  env(workload: Workload): Record<string, string> {
    const container = workload.spec.template.spec.containers[0];
    const where = workload.metadata.name;
    const source = (kind: 'ConfigMap' | 'Secret', name: string) => {
      const values = kind === 'ConfigMap' ? this.configMap(name) : this.secret(name);
      if (!values) throw new Error(`${where}: ${kind} ${name} is ${kind === 'ConfigMap' ? 'not rendered' : 'neither rendered nor in a secret.example.yaml'}`);
      return values;
    };
    const env: Record<string, string> = {};
    for (const from of container.envFrom ?? []) {
      if (from.configMapRef) Object.assign(env, source('ConfigMap', from.configMapRef.name));
      if (from.secretRef) Object.assign(env, source('Secret', from.secretRef.name));
    }
    for (const e of container.env ?? []) {
      const { resourceFieldRef: field, secretKeyRef, configMapKeyRef } = e.valueFrom ?? {};
      const ref = secretKeyRef ?? configMapKeyRef;
      if (field) {
        if (field.resource !== 'limits.cpu') throw new Error(`${e.name}: only limits.cpu is resolved here`);
        // The kubelet rounds up to whole divisors.
        env[e.name] = String(Math.ceil(cpuCores(container.resources!.limits!.cpu) / cpuCores(field.divisor ?? 1)));
      } else if (ref) {
        const value = source(secretKeyRef ? 'Secret' : 'ConfigMap', ref.name)[ref.key];
        if (value === undefined) throw new Error(`${where}: ${e.name} names key ${ref.key}, which ${ref.name} does not have`);
        env[e.name] = value;
      } else {
        env[e.name] = e.value ?? '';
      }
    }
    return env;
  }

  /** The app's own config parser over that environment: what the pod would start with. */
  config(workload: Workload): Config {
    const component = workload.spec.template.metadata.labels[COMPONENT] as 'api' | 'worker';
    return loadConfig(this.env(workload), component);
  }

  /** The queues a worker Deployment consumes, as the worker selects them. */
  queues(worker: Workload): string[] {
    return selectQueues(registry, this.config(worker).workerQueues);
  }

  scaledObjectOf(workload: Workload): ScaledObject | undefined {
    return this.ofKind<ScaledObject>('ScaledObject').find((s) => s.spec.scaleTargetRef.name === workload.metadata.name);
  }

  pod(workload: Workload): Pod {
    const ports = Object.fromEntries(workload.spec.template.spec.containers.flatMap((c) => (c.ports ?? []).map((p) => [p.name ?? '', p.containerPort])));
    return { namespace: this.namespace, labels: workload.spec.template.metadata.labels, ports };
  }
}
