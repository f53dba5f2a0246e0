import type { FileRef } from '@app/blobs';

/** What the API stores in a BullMQ job; the job's name is its type. */
export interface JobData {
  /**
   * The validated input (defaults applied) as canonical JSON. why text: the API serializes it once
   * (for the content key and for Redis alike), and only the pool thread parses it, so a large input
   * never costs the worker's event loop a parse.
   */
  inputJson: string;
  /** Version of the job type the input was validated against. */
  version: number;
  /**
   * Content key (type, version, input hash, and scope for a `share: 'caller'` type): where the
   * worker looks for a cached result before running (see contentKeyOf). The worker caches a result
   * under the key it computes itself from the validated input (see the pool thread), never under
   * this one. Absent on the jobs the API adds: their deduplication id is the same key, which BullMQ
   * keeps in the job's hash already (`deid`); why: 65 bytes less in every job's hash.
   */
  key?: string;
  /** The files the job takes (see JobDefinition.files), by name: references to the blob store, part of `key`. */
  files?: Record<string, FileRef>;
  /** The submitting caller's scope, for a `share: 'caller'` type only: part of its content key. */
  scope?: string;
  /**
   * The API key's name whose fair share the job counts in (see fair-share.ts): set with API keys
   * only, on jobs the API parked; the worker settles the job in that caller's share when it ends.
   */
  caller?: string;
  /** Request id of the submission, so the worker's log lines for this job carry it. */
  requestId?: string;
  /**
   * The start deadline its submission set (epoch ms). A worker that picks the job up later asks its
   * queue's deadline set whether a joined submission raised it (see start-deadlines.ts).
   */
  startBy?: number;
  /**
   * A job a declared schedule made: its scheduler (`<type>:<name>`) and a fingerprint of the
   * declaration, so the API re-registers a schedule only when its declaration changed.
   */
  schedule?: { id: string; spec: string };
  /** A fan-out job, once split: how many children it has (their ids come from `childJobId`). */
  chunks?: number;
  /** A fan-out's child: its parent and its place among the chunks. */
  parent?: { id: string; index: number; of: number };
}

/** The content key of a job: its data's, or else its deduplication id (see JobData.key). */
export function contentKeyOf(job: { readonly data: JobData; readonly deduplicationId?: string }): string | undefined {
  return job.data.key ?? job.deduplicationId;
}
