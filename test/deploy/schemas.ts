import { join } from 'node:path';
import ts from 'typescript';
import { ROOT } from './app-source';
import type { Manifest } from './kustomize';

/**
 * Checks rendered objects against the Kubernetes, KEDA and Prometheus Operator schemas, as published
 * on npm by kubernetes-models, @kubernetes-models/keda and @kubernetes-models/prometheus-operator
 * (4.x, the last CommonJS release, generated from the operator's v0.65 CRDs): their validators
 * (types, required fields, formats, enums) and, since those let unknown fields through where
 * `kubectl apply` (strict field validation) refuses them, TypeScript's excess-property check
 * against their declarations.
 */

/** API groups with models of their own (custom resources); the rest are kubernetes-models'. */
const CRD_MODELS: Record<string, string> = {
  'keda.sh': '@kubernetes-models/keda',
  'monitoring.coreos.com': '@kubernetes-models/prometheus-operator',
};

/** The module of an object's model: `apps/v1` Deployment → kubernetes-models/apps/v1/Deployment. */
function modelModule({ apiVersion, kind }: Manifest): string {
  const group = apiVersion.includes('/') ? apiVersion.split('/')[0] : '';
  return `${CRD_MODELS[group] ?? 'kubernetes-models'}/${apiVersion}/${kind}`;
}

type ModelClass = new (data: unknown) => { validate(): void };

/** Schema violations of each object, as `Kind/name: message`; empty when all are valid. */
export function schemaErrors(objects: Manifest[]): string[] {
  return objects.flatMap((object) => {
    const where = `${object.kind}/${object.metadata.name}`;
    let Model: ModelClass;
    try {
      Model = (require(modelModule(object)) as Record<string, ModelClass>)[object.kind];
    } catch {
      return [`${where}: no schema for ${object.apiVersion} ${object.kind}`];
    }
    try {
      new Model(object).validate();
      return [];
    } catch (error) {
      return [`${where}: ${(error as Error).message}`];
    }
  });
}

/**
 * Fields the schemas do not declare (a misspelt or misplaced key), found by type-checking each
 * object as an object literal of its model's interface: `const x: IDeployment = {...}`.
 */
export function unknownFieldErrors(objects: Manifest[]): string[] {
  const file = join(ROOT, 'test/deploy/__rendered__.ts');
  const lines = objects.map((object, i) => `import type { I${object.kind} as T${i} } from '${modelModule(object)}';`);
  const owners: { line: number; where: string }[] = [];
  objects.forEach((object, i) => {
    owners.push({ line: lines.length, where: `${object.kind}/${object.metadata.name}` });
    lines.push(...`export const o${i}: T${i} = ${JSON.stringify(object, null, 1)};`.split('\n'));
  });
  const source = lines.join('\n');
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    types: [],
    lib: ['lib.es2022.d.ts'],
    // why Bundler: it reads the packages' `exports` (their `types` entries) like Node16 does, for any module kind.
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    target: ts.ScriptTarget.ES2022,
  };
  const host = ts.createCompilerHost(options);
  const { getSourceFile, fileExists, readFile } = host;
  host.getSourceFile = (name, version, ...rest) =>
    name === file ? ts.createSourceFile(name, source, version) : getSourceFile.call(host, name, version, ...rest);
  host.fileExists = (name) => name === file || fileExists.call(host, name);
  host.readFile = (name) => (name === file ? source : readFile.call(host, name));
  const program = ts.createProgram([file], options, host);
  const sourceFile = program.getSourceFile(file)!;
  return ts.getPreEmitDiagnostics(program, sourceFile).map((d) => {
    const message = ts.flattenDiagnosticMessageText(d.messageText, ' ');
    if (d.start === undefined) return message;
    const { line } = sourceFile.getLineAndCharacterOfPosition(d.start);
    const owner = owners.filter((o) => o.line <= line).at(-1);
    const lineText = lines[line].trim();
    return `${owner?.where ?? 'import'}: ${lineText}: ${message}`;
  });
}
