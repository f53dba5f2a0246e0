import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import Ajv2020, { ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';

export type OpenApiDocument = {
  openapi: string;
  info: { license?: { name: string; identifier?: string } };
  servers?: Array<{ url: string }>;
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Record<string, unknown>>; securitySchemes?: Record<string, unknown> };
};
type Media = { schema?: unknown; example?: unknown; examples?: Record<string, { value: unknown }> };
export type Operation = {
  operationId?: string;
  parameters?: Array<{ name: string; in: string; schema?: unknown; example?: unknown }>;
  summary?: string;
  requestBody?: { content: Record<string, Media> };
  responses: Record<string, { content?: Record<string, Media> }>;
  security?: unknown[];
};

/** Result of @seriousme/openapi-schema-validator (an ES module, so it runs in a node child process). */
export function validateOpenApi(document: unknown): { valid: boolean; errors?: unknown } {
  const out = execFileSync(process.execPath, [join(__dirname, 'openapi-validate.mjs')], { input: JSON.stringify(document), encoding: 'utf8', timeout: 60_000 });
  return JSON.parse(out) as { valid: boolean; errors?: unknown };
}

export type LintProblem = { rule: string; severity: 'error' | 'warn'; message: string; pointer: string };

/** Problems Redocly's `recommended` ruleset finds in `document` (@redocly/openapi-core, an ES module: a node child process too). */
export function lintOpenApi(document: unknown): LintProblem[] {
  const out = execFileSync(process.execPath, [join(__dirname, 'openapi-lint.mjs')], { input: JSON.stringify(document), encoding: 'utf8', timeout: 60_000 });
  return JSON.parse(out) as LintProblem[];
}

/** JSON Schema validators for schemas inside the document (its `#/components/...` refs resolve). */
export class DocumentSchemas {
  private readonly ajv = new Ajv2020({ strict: false, allErrors: true });
  private readonly cache = new Map<string, ValidateFunction>();

  constructor(private readonly document: OpenApiDocument) {
    addFormats(this.ajv);
    this.ajv.addSchema({ $id: 'openapi.json', components: document.components });
  }

  /** Errors of `value` against `schema` (a schema object from the document), or [] when it is valid. */
  check(schema: unknown, value: unknown): string[] {
    const text = JSON.stringify(schema).replaceAll('"#/components/', '"openapi.json#/components/');
    let validate = this.cache.get(text);
    if (!validate) this.cache.set(text, (validate = this.ajv.compile(JSON.parse(text) as object)));
    return validate(value) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath || '(root)'} ${e.message ?? ''}`);
  }

  /** The schema of a documented response. */
  response(path: string, method: string, status: number, mediaType = 'application/json'): unknown {
    const schema = this.document.paths[path]?.[method]?.responses[String(status)]?.content?.[mediaType]?.schema;
    if (!schema) throw new Error(`the document has no ${mediaType} schema for ${method.toUpperCase()} ${path} → ${status}`);
    return schema;
  }

  /** Every example in the document (bodies, responses, parameters) with the schema it must match. */
  *examples(): Generator<{ where: string; schema: unknown; value: unknown }> {
    const fromMedia = function* (where: string, content: Record<string, Media> | undefined) {
      for (const [type, media] of Object.entries(content ?? {})) {
        if (media.example !== undefined && type.includes('json')) yield { where: `${where} ${type} example`, schema: media.schema, value: media.example };
        for (const [name, example] of Object.entries(media.examples ?? {})) yield { where: `${where} ${type} ${name}`, schema: media.schema, value: example.value };
      }
    };
    for (const [path, item] of Object.entries(this.document.paths)) {
      for (const [method, op] of Object.entries(item)) {
        yield* fromMedia(`${method.toUpperCase()} ${path} body`, op.requestBody?.content);
        for (const [status, response] of Object.entries(op.responses)) yield* fromMedia(`${method.toUpperCase()} ${path} → ${status}`, response.content);
        for (const p of op.parameters ?? []) if (p.example !== undefined) yield { where: `${method.toUpperCase()} ${path} ${p.in} ${p.name}`, schema: p.schema, value: p.example };
      }
    }
  }
}
