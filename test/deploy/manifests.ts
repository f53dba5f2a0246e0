import { parseAllDocuments } from 'yaml';
import { readRepoFile } from './app-source';

/** Every document of a YAML file as plain data; a syntax error or warning fails the test naming the file. */
export function readYaml(path: string): unknown[] {
  // why merge: Compose files share blocks with `<<: *anchor`, a YAML 1.1 feature Compose supports.
  const docs = parseAllDocuments(readRepoFile(path), { merge: true });
  if (!Array.isArray(docs)) return [];
  const problems = docs.flatMap((doc) => [...doc.errors, ...doc.warnings]);
  if (problems.length) throw new Error(`${path}: ${problems.map((p) => p.message).join('; ')}`);
  return docs.map((doc) => doc.toJS() as unknown).filter((value) => value !== null);
}

/** A `KEY=value` file as kustomize's configMapGenerator reads it (`#` comments, blank lines). */
export function readEnvFile(path: string): Map<string, string> {
  const lines = readRepoFile(path)
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
  return new Map(lines.map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
}

/** A Kubernetes CPU quantity in cores: "2" → 2, "250m" → 0.25. */
export function cpuCores(quantity: string | number): number {
  const text = String(quantity);
  return text.endsWith('m') ? Number(text.slice(0, -1)) / 1000 : Number(text);
}

const MEMORY_UNITS: Record<string, number> = { '': 1, Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3, k: 1e3, M: 1e6, G: 1e9 };

/** A Kubernetes memory quantity in MiB: "512Mi" → 512, "2Gi" → 2048. */
export function memoryMiB(quantity: string | number): number {
  const [, amount, unit] = /^(\d+(?:\.\d+)?)([KMG]i?|k)?$/.exec(String(quantity)) ?? [];
  if (amount === undefined) throw new Error(`not a memory quantity: ${quantity}`);
  return (Number(amount) * MEMORY_UNITS[unit ?? '']) / 1024 ** 2;
}

/** A Compose duration in ms: "45s" → 45000, "1m30s" → 90000. */
export function durationMs(text: string): number {
  const units: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
  const parts = [...text.matchAll(/(\d+)(ms|s|m|h)/g)];
  if (!parts.length || parts.map((p) => p[0]).join('') !== text) throw new Error(`not a duration: ${text}`);
  return parts.reduce((ms, [, n, unit]) => ms + Number(n) * units[unit], 0);
}

export function selects(selector: Record<string, string>, labels: Record<string, string>): boolean {
  return Object.entries(selector).every(([key, value]) => labels[key] === value);
}

// The parts of the Kubernetes and Compose schemas these tests read.

export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  spec?: unknown;
}

export interface Probe {
  httpGet?: { path: string; port: number | string };
  exec?: { command: string[] };
}

export interface Container {
  name: string;
  image: string;
  imagePullPolicy?: string;
  args?: string[];
  ports?: { name?: string; containerPort: number }[];
  env?: {
    name: string;
    value?: string;
    valueFrom?: {
      resourceFieldRef?: { resource: string; divisor?: string | number };
      secretKeyRef?: { name: string; key: string; optional?: boolean };
      configMapKeyRef?: { name: string; key: string; optional?: boolean };
    };
  }[];
  envFrom?: { configMapRef?: { name: string }; secretRef?: { name: string; optional?: boolean } }[];
  resources?: { requests?: Record<string, string | number>; limits?: Record<string, string | number> };
  securityContext?: SecurityContext;
  startupProbe?: Probe;
  readinessProbe?: Probe;
  livenessProbe?: Probe;
  lifecycle?: { preStop?: { sleep?: { seconds: number }; exec?: { command: string[] } } };
  volumeMounts?: { name: string; mountPath: string }[];
}

export interface SecurityContext {
  runAsNonRoot?: boolean;
  runAsUser?: number;
  runAsGroup?: number;
  fsGroup?: number;
  allowPrivilegeEscalation?: boolean;
  readOnlyRootFilesystem?: boolean;
  capabilities?: { drop?: string[] };
  seccompProfile?: { type: string };
}

/** A Deployment or a StatefulSet. */
export interface Workload extends K8sObject {
  spec: {
    replicas?: number;
    selector: { matchLabels: Record<string, string> };
    template: {
      metadata: { labels: Record<string, string>; annotations?: Record<string, string> };
      spec: {
        containers: Container[];
        securityContext?: SecurityContext;
        terminationGracePeriodSeconds?: number;
        enableServiceLinks?: boolean;
        volumes?: { name: string; emptyDir?: object; persistentVolumeClaim?: { claimName: string } }[];
        automountServiceAccountToken?: boolean;
      };
    };
  };
}

export interface ComposeService {
  image?: string;
  build?: { context: string; dockerfile: string; target: string };
  command?: string[];
  environment?: Record<string, string | number>;
  healthcheck?: { test: string[] };
  stop_grace_period?: string;
  cpus?: number | string;
  mem_limit?: string;
  ports?: (string | number)[];
  read_only?: boolean;
  cap_drop?: string[];
}
