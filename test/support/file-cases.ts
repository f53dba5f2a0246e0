import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

/** What test/files.e2e-spec.ts gives the cases of a type that takes files: its stacks, one per store. */
export interface FileCaseContext {
  /** Submits `input` and `files` (name → bytes) as multipart/form-data to the stack of `kind`, as its first caller. */
  post(
    kind: 'file' | 's3',
    type: string,
    input: unknown,
    files: Record<string, Buffer>,
    headers?: Record<string, string>,
  ): Promise<{ status: number; body: any; headers: Headers }>;
  /** The bytes at a file's `url` in a job view, as its owner downloads them (following S3's 303). */
  download(kind: 'file' | 's3', url: string): Promise<Buffer>;
}

export type FileCases = (context: FileCaseContext) => void;

const DIR = join(__dirname, '..', 'files');

/**
 * The cases of job types that take files, each in test/files/<type>.cases.ts: they run on the file
 * suite's stacks (no stack of their own) and go with their type (`npm run remove:job` removes them).
 */
export function fileTypeCases(): FileCases[] {
  // why the check: removing the last such type removes the folder with its cases.
  if (!existsSync(DIR)) return [];
  return readdirSync(DIR)
    .filter((file) => file.endsWith('.cases.ts'))
    .sort()
    .map((file) => (require(join(DIR, file)) as { default: FileCases }).default);
}
