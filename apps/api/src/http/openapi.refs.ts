/**
 * How routes refer to the schemas of the OpenAPI document. why here and not in docs/: the controllers
 * describe themselves with these whether or not the document is served (API_DOCS), and deleting the
 * docs folder must leave them whole.
 */

/** A JSON Schema (2020-12, OpenAPI 3.1's dialect). @nestjs/swagger's JsonSchema type is 3.0's (no `const`). */
export type JsonSchema = Record<string, unknown>;

/** `#/components/schemas/<name>`. */
export const schemaRef = (name: string): { $ref: string } => ({ $ref: `#/components/schemas/${name}` });

/**
 * Placeholders for "the job type in the path". A route whose path has a `{type}` parameter is
 * documented once per registered type, at `/…/<type>/…`, with these replaced by that type's schemas
 * (see expandJobTypePaths in docs/). Outside such paths JOB_VIEW stands for any type's job; JOB_INPUT
 * has no component of its own (it would be unused), so it belongs in `{type}` paths only.
 */
export const JOB_INPUT = schemaRef('JobInput');
export const JOB_VIEW = schemaRef('JobView');
