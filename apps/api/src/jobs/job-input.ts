import { canonicalJson, contentKey, JobDefinition } from '@app/jobs';
import { ApiError, FieldError } from '../http/api-error';

/** A validated input, ready to enqueue: what single and batch submissions share. */
export interface PreparedJob {
  readonly def: JobDefinition;
  /** The validated input (defaults applied) as canonical JSON: what the job carries. */
  readonly inputJson: string;
  /** Content key: the cache key and the deduplication id. */
  readonly key: string;
  /** The caller's scope, for a `share: 'caller'` type (part of its content key); else undefined. */
  readonly scope?: string;
}

/**
 * Validates `body` as the input of `def`, submitted by the caller of `scope`; throws INVALID_INPUT
 * naming each bad field.
 */
export function prepareJob(def: JobDefinition, body: unknown, scope: string): PreparedJob {
  const parsed = def.input.safeParse(body);
  if (!parsed.success) {
    const errors: FieldError[] = parsed.error.issues.slice(0, 20).map((issue) => ({
      field: issue.path.map(String).join('.'),
      message: issue.code === 'unrecognized_keys' ? `unknown field(s): ${issue.keys.join(', ')}` : issue.message,
    }));
    throw new ApiError('INVALID_INPUT', `The input for "${def.name}" is invalid`, { errors });
  }
  const inputJson = canonicalJson(parsed.data);
  if (def.share !== 'caller') return { def, inputJson, key: contentKey(def, inputJson) };
  return { def, inputJson, key: contentKey(def, inputJson, scope), scope };
}
