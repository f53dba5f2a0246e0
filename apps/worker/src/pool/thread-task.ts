import { readFile } from 'node:fs/promises';
import { type BlobStore, hashesOf } from '@app/blobs';
import { allJobs, canonicalJson, CodedJobError, contentKey, type InputFile, JobDefinition, JobFailureCode, type JobLogger, JobRegistry, parseFailure, runnerOf } from '@app/jobs';
import { TaskLog } from './thread-log';
import type { ChannelMessage, PlannedChild, ProgressMessage, ThreadFile, ThreadResult, ThreadTask } from './thread-protocol';
import { ResultFiles } from './thread-files';
import { startSpan } from './thread-span';

const registry = new JobRegistry(allJobs);

type Outcome = { ok: true; value: unknown; key: string } | { ok: false; code: JobFailureCode; message: string };

/**
 * Runs one task: on a pool thread (thread.ts), or on the worker's event loop for an inline type
 * (JobPool). `post` carries its progress and log lines to the worker's main thread; `threadId` is 0
 * there. `store` gives the blob store its result files go to (none inline). No Nest, no Redis and no
 * OpenTelemetry here; it knows only the job registry and the blob store.
 */
export async function runTask(
  task: ThreadTask,
  post: (message: ChannelMessage) => void,
  threadId: number,
  logLevel: number,
  store?: () => BlobStore | undefined,
): Promise<ThreadResult> {
  // why the span is made here: it times the run itself, not the hop to the thread; the main thread
  // exports it with the result (see JobPool), so a thread that dies loses nothing but its timing.
  const span = task.trace && startSpan(task.trace.traceparent, `${task.step} ${task.name}`, { ...task.trace.attributes, 'thread.id': threadId });
  const log = new TaskLog(task.taskId, threadId, logLevel, post);
  const outcome = await execute(task, log.logger, post, store);
  log.finish();
  return { ...outcome, posted: log.posted, span: span?.end(outcome.ok ? undefined : `${outcome.code}: ${outcome.message}`) };
}

async function execute(
  { step, taskId, name, version, inputJson, scope, files, attempt, partsJson, storeLarge }: ThreadTask,
  log: JobLogger,
  post: (message: ChannelMessage) => void,
  store: (() => BlobStore | undefined) | undefined,
): Promise<Outcome> {
  const def = registry.get(name);
  const runner = def && runnerOf(def, version);
  if (!runner) return { ok: false, code: JobFailureCode.JOB_REJECTED, message: `unknown job type "${name}" v${version}` };
  // why validate again: the API did, but a job can also reach the queue another way (a script, an
  // older API); bad input fails as JOB_REJECTED, which is not retried. An older version's own schema reads its jobs.
  const parsed = runner.input.safeParse(safeParse(inputJson));
  if (!parsed.success) {
    return { ok: false, code: JobFailureCode.JOB_REJECTED, message: `invalid input: ${parsed.error.issues[0]?.message ?? 'unreadable'}` };
  }
  // why here, from the input as validated: the cache key is never taken from job data, which anyone
  // able to add a job (a script, a dashboard) could point at another input's result.
  const key = contentKey({ name: def.name, version: runner.version, share: def.share }, canonicalJson(parsed.data), scope, hashesOf(files));
  let last = -1;
  const blobs = step !== 'split' && (def.returnsFiles || storeLarge) ? store?.() : undefined;
  const results = blobs && new ResultFiles(blobs);
  const ctx = {
    attempt,
    progress: (percent: number) => {
      const value = Math.max(0, Math.min(100, Math.round(percent)));
      if (value !== last) post({ taskId, percent: (last = value) } satisfies ProgressMessage);
    },
    log,
    ...(files && { files: Object.fromEntries(Object.entries(files).map(([file, ref]) => [file, inputFile(ref)])) }),
    ...(def.returnsFiles && { writeFile: results?.write ?? noStore }),
  };
  try {
    if (step === 'split') return { ok: true, value: split(def, parsed.data, scope), key };
    const value = step === 'merge' ? def.fanOut!.merge(JSON.parse(partsJson!) as unknown[], parsed.data) : await runner.run(parsed.data, ctx);
    return { ok: true, value: results ? await results.result(value, storeLarge === true) : value, key };
  } catch (error) {
    // why only JOB_REJECTED passes: a run may say its input can never succeed (a corrupt image), so
    // no retry runs it again; every other code is the worker's to give.
    if (error instanceof CodedJobError && error.code === JobFailureCode.JOB_REJECTED) return { ok: false, ...parseFailure(error.message) };
    return { ok: false, code: JobFailureCode.JOB_FAILED, message: error instanceof Error ? error.message : String(error) };
  }
}

const noStore = () => Promise.reject(new Error('this worker has no blob store (BLOB_STORE_URL) for the files the job returns'));

/** A fan-out's children, each input validated by the child type's schema (defaults applied) and keyed. */
function split(def: JobDefinition, input: unknown, scope: string | undefined): PlannedChild[] {
  const child = def.fanOut!.child;
  return def.fanOut!.split(input).map((chunk, i) => {
    const parsed = child.input.safeParse(chunk);
    if (!parsed.success) throw new Error(`split gave chunk ${i} an invalid ${child.name} input: ${parsed.error.issues[0]?.message}`);
    const inputJson = canonicalJson(parsed.data);
    return { inputJson, key: contentKey(child, inputJson, scope) };
  });
}

/** A file as `run` sees it: read on this thread, from its path or its presigned URL. */
function inputFile({ sha256, bytes, contentType, path, url }: ThreadFile): InputFile {
  const read = async (): Promise<Uint8Array> => {
    const data = path ? await readFile(path) : await fetch(url!).then(async (res) => {
      if (!res.ok) throw new Error(`the blob store answered ${res.status} for input file ${sha256}`);
      return new Uint8Array(await res.arrayBuffer());
    });
    if (data.length !== bytes) throw new Error(`input file ${sha256} has ${data.length} bytes in the blob store, not ${bytes}`);
    return data;
  };
  return { sha256, bytes, contentType, ...(path && { path }), read };
}

function safeParse(json: string): unknown {
  try {
    return JSON.parse(json);
  } catch {
    return undefined;
  }
}
