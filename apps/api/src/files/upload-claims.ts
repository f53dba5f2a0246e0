import type { FileRef } from '@app/blobs';
import type { JobDefinition } from '@app/jobs';

/** Injection token of the uploads capability (apps/api/src/uploads provides it). */
export const UPLOAD_CLAIMS = Symbol('UPLOAD_CLAIMS');

/**
 * What the intake asks of the uploads capability: the file an upload holds, when a submission names
 * the upload's id instead of sending the file. Without the capability, a submission sends its files.
 */
export interface UploadClaims {
  /**
   * The file of upload `id`, made by the caller of `scope` for file `name` of `def`, checked as a
   * part would be (size, type by its bytes) and moved to its content address; the upload is used up.
   * A 4xx problem when it is not the caller's, not for that file, not received or expired.
   */
  claim(id: string, scope: string, def: JobDefinition, name: string): Promise<FileRef>;
}
