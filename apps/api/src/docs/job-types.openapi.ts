import type { OpenAPIObject } from '@nestjs/swagger';
import { z } from 'zod';
import type { JobDefinition, JobRegistry } from '@app/jobs';
import { JOB_INPUT, JOB_VIEW, type JsonSchema, schemaRef } from '../http/openapi.refs';
import { jobViewSchema } from './openapi.schemas';

const names = (type: string) => ({ input: `JobInput.${type}`, output: `JobOutput.${type}`, view: `JobView.${type}` });

/** The JSON Schema of a zod schema as an OpenAPI component: `$defs` become components of their own. */
function componentOf(schema: z.ZodType, io: 'input' | 'output', name: string, into: Record<string, JsonSchema>): JsonSchema {
  const { $schema: _dialect, $defs, ...root } = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as JsonSchema & { $defs?: Record<string, JsonSchema> };
  // why rewrite: inside a component, `#/$defs/x` would resolve against the OpenAPI document's root.
  const rewrite = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(rewrite);
    if (!node || typeof node !== 'object') return node;
    return Object.fromEntries(
      Object.entries(node).map(([key, value]) => {
        if (key !== '$ref' || typeof value !== 'string') return [key, rewrite(value)];
        if (value === '#') return [key, `#/components/schemas/${name}`];
        return [key, value.replace(/^#\/\$defs\//, `#/components/schemas/${name}.`)];
      }),
    );
  };
  for (const [key, def] of Object.entries($defs ?? {})) into[`${name}.${key}`] = rewrite(def) as JsonSchema;
  return rewrite(root) as JsonSchema;
}

/** Every registered type's input, output and job view, from its declaration, plus the any-type job view. */
export function jobTypeSchemas(registry: JobRegistry): Record<string, JsonSchema> {
  const schemas: Record<string, JsonSchema> = {};
  const types = registry.list();
  for (const def of types) {
    const n = names(def.name);
    schemas[n.input] = { ...componentOf(def.input, 'input', n.input, schemas), description: def.description };
    schemas[n.output] = componentOf(def.output, 'output', n.output, schemas);
    schemas[n.view] = jobViewSchema({ const: def.name }, schemaRef(n.output));
  }
  schemas.JobView = {
    description: 'A job of any type; `type` says which, and so the shape of `result`.',
    oneOf: types.map((d) => schemaRef(names(d.name).view)),
    discriminator: { propertyName: 'type', mapping: Object.fromEntries(types.map((d) => [d.name, `#/components/schemas/${names(d.name).view}`])) },
  };
  return schemas;
}

type Operation = {
  operationId?: string;
  summary?: string;
  description?: string;
  parameters?: Array<{ in?: string; name?: string }>;
  requestBody?: { content?: Record<string, { schema?: unknown; examples?: Record<string, { summary?: string; value: unknown }> }> };
};

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

/** The operation of a `{type}` path, for one type: its schemas in place of the placeholders, its examples on the body. */
function forType(operation: Operation, def: JobDefinition): Operation {
  const n = names(def.name);
  const text = JSON.stringify(operation)
    .replaceAll(`"${JOB_INPUT.$ref}"`, `"#/components/schemas/${n.input}"`)
    .replaceAll(`"${JOB_VIEW.$ref}"`, `"#/components/schemas/${n.view}"`);
  const op = JSON.parse(text) as Operation;
  op.parameters = op.parameters?.filter((p) => !(p.in === 'path' && p.name === 'type'));
  if (op.parameters?.length === 0) delete op.parameters;
  if (op.operationId) op.operationId = `${op.operationId}_${def.name.replaceAll('-', '_')}`;
  op.summary = `${op.summary ?? ''} (${def.name})`.trim();
  op.description = [def.description, op.description].filter(Boolean).join('\n\n');
  const body = op.requestBody?.content?.['application/json'];
  const schema = body?.schema as { $ref?: string; type?: string; items?: { $ref?: string } } | undefined;
  if (body && def.examples.length > 0) {
    if (schema?.$ref === `#/components/schemas/${n.input}`) {
      body.examples = Object.fromEntries(def.examples.map((value, i) => [`example${i + 1}`, { summary: JSON.stringify(value), value }]));
    } else if (schema?.type === 'array' && schema.items?.$ref === `#/components/schemas/${n.input}`) {
      body.examples = { examples: { summary: 'every declared example', value: [...def.examples] } };
    }
  }
  return op;
}

const hasType = (path: string) => path.includes('{type}');
const depth = (path: string) => path.split('/').length;

/**
 * Replaces the paths with a `{type}` parameter by one path per registered job type, in place, where
 * the first of them was: type by type, each type's own route before its sub-routes (`…/batch`).
 */
export function expandJobTypePaths(document: OpenAPIObject, registry: JobRegistry): void {
  // why sorted here: Swagger UI lists paths in document order, which is otherwise the order the controllers were scanned in.
  const templates = Object.keys(document.paths).filter(hasType).sort((a, b) => depth(a) - depth(b));
  const paths: OpenAPIObject['paths'] = {};
  for (const [path, item] of Object.entries(document.paths)) {
    if (!hasType(path)) {
      paths[path] = { ...paths[path], ...item };
      continue;
    }
    if (path !== templates[0]) continue;
    for (const def of registry.list()) {
      for (const template of templates) {
        const concrete = template.replace('{type}', def.name);
        const expanded: Record<string, unknown> = { ...paths[concrete] };
        for (const method of METHODS) {
          const operation = document.paths[template][method] as Operation | undefined;
          if (operation) expanded[method] = forType(operation, def);
        }
        paths[concrete] = expanded;
      }
    }
  }
  document.paths = paths;
}
