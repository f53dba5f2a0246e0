import type { FileRef } from '@app/blobs';
import type { BlobTarget } from '@app/config';
import type { JobFailureCode } from '@app/jobs';
import type { FinishedSpan, SpanAttributeValue } from '@app/tracing';

/**
 * What a task does: `run` a job; or, for a fan-out job, `split` its input into its children's
 * inputs, or `merge` their results (`partsJson`, a JSON array in chunk order) into its own.
 */
export type ThreadStep = 'run' | 'split' | 'merge';

/** A child job planned by `split`: its validated input as canonical JSON, and its content key. */
export interface PlannedChild {
  inputJson: string;
  key: string;
}

/**
 * A file a job takes, as the worker's main thread hands it over: its reference, and where the pool
 * thread reads it (a path in a file store, a short-lived presigned URL in S3). why not its bytes:
 * they would be copied through the main thread's heap and postMessage.
 */
export type ThreadFile = FileRef & { path?: string; url?: string };

/** What the worker's main thread sends a pool thread. */
export interface ThreadTask {
  step: ThreadStep;
  /** Tags this task's progress and log messages on the pool's channel. */
  taskId: number;
  name: string;
  /** The version the job was submitted for: its input schema and code run it. */
  version: number;
  /** The job's input as JSON: parsed and validated here, off the worker's event loop. */
  inputJson: string;
  /** The caller's scope of a `share: 'caller'` job: part of its content key and its children's. */
  scope?: string;
  /** The files the job takes, by name: their hashes are part of its content key; the thread reads them itself. */
  files?: Record<string, ThreadFile>;
  attempt: number;
  partsJson?: string;
  /** The result may go to the blob store when it is large (see ResultFiles): not a fan-out chunk's, which its parent merges from Redis. */
  storeLarge?: boolean;
  /** With tracing on: the parent of this task's span (W3C traceparent) and attributes for it. */
  trace?: { traceparent: string; attributes: Record<string, SpanAttributeValue> };
}

/**
 * What comes back. Errors travel as data: classes and their fields do not survive structured clone.
 * `key` is the content key of the input as validated here: what the result may be cached under.
 */
export type ThreadResult = ({ ok: true; value: unknown; key: string } | { ok: false; code: JobFailureCode; message: string }) & {
  /** Messages this task posted on the channel (log lines and drop counts), so none is left behind. */
  posted: number;
  /** The task's span, when it was given a traceparent. */
  span?: FinishedSpan;
};

/** A progress report on the pool's BroadcastChannel. */
export interface ProgressMessage {
  taskId: number;
  percent: number;
}

/**
 * A job's log line on the pool's BroadcastChannel (`fieldsJson`: its fields as JSON), or, with
 * `dropped`, how many lines the rate limit dropped since the last such count.
 */
export type LogMessage = { taskId: number; threadId: number } & ({ level: number; msg: string; fieldsJson?: string } | { dropped: number });

export type ChannelMessage = ProgressMessage | LogMessage;

/** What every pool thread gets as piscina's workerData. */
export interface ThreadData {
  /**
   * Name of this pool's BroadcastChannel. why one channel, not a MessagePort per task: piscina keeps
   * each transferred port alive in the thread, so a port per job leaked ~5 KB per job until the
   * thread ran out of heap.
   */
  progressChannel: string;
  /** The lowest pino level value a job's log line is sent at (LOG_LEVEL); below it, ctx.log does nothing. */
  logLevel: number;
  /** `idle`: the thread puts itself on SCHED_IDLE as it starts (WORKER_SCHED, when the host allows it). */
  sched: 'idle' | 'other';
  /** Where the threads write result files (BLOB_STORE_URL); undefined without a store. */
  blobStore?: BlobTarget;
}
