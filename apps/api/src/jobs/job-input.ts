import { type FileRef, hashesOf } from '@app/blobs';
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
  /** The stored files it takes, by name (part of its content key). */
  readonly files?: Readonly<Record<string, FileRef>>;
}

/**
 * Validates `body` as the input of `def`, submitted by the caller of `scope`; throws INVALID_INPUT
 * naming each bad field.
 */
export function prepareJob(def: JobDefinition, body: unknown, scope: string, files?: Readonly<Record<string, FileRef>>): PreparedJob {
  const inputJson = canonicalJson(validInput(def, body));
  const withFiles = files && Object.keys(files).length > 0 ? { files } : {};
  if (def.share !== 'caller') return { def, inputJson, key: contentKey(def, inputJson, undefined, hashesOf(files)), ...withFiles };
  return { def, inputJson, key: contentKey(def, inputJson, scope, hashesOf(files)), scope, ...withFiles };
}

/** `body` validated as the input of `def` (defaults applied); throws INVALID_INPUT naming each bad field. */
export function validInput(def: JobDefinition, body: unknown): unknown {
  const parsed = def.input.safeParse(body);
  if (!parsed.success) {
    const errors: FieldError[] = parsed.error.issues.slice(0, 20).map((issue) => ({
      field: issue.path.map(String).join('.'),
      message: issue.code === 'unrecognized_keys' ? `unknown field(s): ${issue.keys.join(', ')}` : issue.message,
    }));
    throw new ApiError('INVALID_INPUT', `The input for "${def.name}" is invalid`, { errors });
  }
  return parsed.data;
}
