import { isStoredResult, type ResultFile } from '@app/blobs';
import type { CachedResult } from '@app/cache';
import { JobFailure, JobFailureCode, parseFailure } from '@app/jobs';
import type { JobRecord } from '@app/queue';

export type JobStatus = 'queued' | 'active' | 'completed' | 'failed' | 'cancelled' | 'expired';

/** What every job endpoint returns. Timestamps are ISO 8601. */
export interface JobView {
  id: string;
  type: string;
  status: JobStatus;
  progress?: number;
  /** Absent when it went to the blob store (larger than LARGE_RESULT_BYTES): then `files` lists it as `result.json`. */
  result?: unknown;
  /** The files a completed job returned (and a large result), each with the URL its owners download it from. */
  files?: FileView[];
  error?: JobFailure;
  cached?: boolean;
  /** The tags the caller reading it gave it (`Job-Tags`); absent without any. */
  tags?: string[];
  /** The job a replay of this failed one submitted (POST /admin/dead-letters/replay); absent until then. */
  replayedAs?: string;
  attempts: number;
  createdAt: string;
  startedAt?: string;
  finishedAt?: string;
}

/** A file a job returned, as its view lists it. */
export interface FileView extends ResultFile {
  /** `/v1/jobs/{id}/files/{name}`: the file (a file store), or a 303 to a short-lived presigned URL (S3). */
  url: string;
}

export type { JobRecord } from '@app/queue';

const FINAL: ReadonlySet<JobStatus> = new Set(['completed', 'failed', 'cancelled', 'expired']);

export const isFinal = (view: Pick<JobView, 'status'>): boolean => FINAL.has(view.status);

/** The last whole second formatted, `YYYY-MM-DDTHH:MM:SS.`: jobs finishing in the same second share it. */
let second = NaN;
let secondText = '';
/** Epoch ms from 1970 to 9999 (toISOString's plain format); beyond, toISOString itself. */
const LAST_PLAIN_MS = 253_402_300_799_999;

/**
 * Epoch ms as ISO 8601, exactly as `toISOString`. why not it: at ~2 µs a call here, the four
 * timestamps of a submit-and-wait were a measurable part of the API's time per job.
 */
export function iso(ms: number | undefined): string | undefined {
  if (!ms) return undefined;
  if (!Number.isInteger(ms) || ms < 0 || ms > LAST_PLAIN_MS) return new Date(ms).toISOString();
  const s = Math.floor(ms / 1000);
  if (s !== second) {
    secondText = new Date(s * 1000).toISOString().slice(0, 20);
    second = s;
  }
  const frac = ms - s * 1000;
  return `${secondText}${frac < 10 ? '00' : frac < 100 ? '0' : ''}${frac}Z`;
}

function statusOf(state: string, failure: JobFailure | undefined): JobStatus {
  switch (state) {
    case 'active':
    case 'waiting-children': // a fan-out job whose chunks are running
      return 'active';
    case 'completed':
      return 'completed';
    case 'failed':
      return failure?.code === JobFailureCode.JOB_CANCELLED ? 'cancelled' : failure?.code === JobFailureCode.JOB_EXPIRED ? 'expired' : 'failed';
    default:
      // waiting, prioritized, delayed (a retry's backoff)
      return 'queued';
  }
}

/** The view of a job BullMQ still holds, given its state from `getState()`. */
export function viewOfJob(job: JobRecord, state: string): JobView {
  const failure = state === 'failed' ? parseFailure(job.failedReason) : undefined;
  const status = statusOf(state, failure);
  const view: JobView = {
    id: job.id!,
    type: job.name,
    status,
    attempts: Math.max(job.attemptsMade, job.attemptsStarted ?? 0),
    createdAt: iso(job.timestamp)!,
  };
  if (typeof job.progress === 'number' && (status === 'active' || job.progress > 0)) view.progress = job.progress;
  if (status === 'completed') {
    view.progress = 100;
    withResult(view, job.returnvalue);
  }
  if (failure) view.error = failure;
  const startedAt = iso(job.processedOn);
  if (startedAt) view.startedAt = startedAt;
  if (FINAL.has(status)) view.finishedAt = iso(job.finishedOn);
  return view;
}

/** Sets a completed view's result as the job stored it: the JSON result, and the files it returned (see StoredResult). */
function withResult(view: JobView, value: unknown): void {
  if (!isStoredResult(value)) {
    view.result = value;
    return;
  }
  if ('result' in value) view.result = value.result;
  view.files = value.$files.map((file) => ({ ...file, url: `/v1/jobs/${encodeURIComponent(view.id)}/files/${encodeURIComponent(file.name)}` }));
}

/**
 * Views of cache entries, by entry. why: the in-process cache hands back the same entry object for
 * every hit on it, and formatting its three timestamps (~2 µs each here) was 2.7% of the API's busy
 * time in a cache-hit profile; an entry never changes, so neither does its view. Frozen: every caller shares it.
 */
const cachedViews = new WeakMap<CachedResult, JobView>();

/** The view of a result served from the cache (the job that produced it may be long gone). */
export function viewOfCached(entry: CachedResult): JobView {
  let view = cachedViews.get(entry);
  if (!view) cachedViews.set(entry, (view = Object.freeze(buildCachedView(entry))));
  return view;
}

function buildCachedView(entry: CachedResult): JobView {
  const view: JobView = {
    id: entry.id,
    type: entry.type,
    status: 'completed',
    progress: 100,
    cached: true,
    attempts: entry.attempts,
    createdAt: iso(entry.createdAt)!,
    startedAt: iso(entry.startedAt),
    finishedAt: iso(entry.finishedAt),
  };
  withResult(view, entry.result);
  return view;
}

/**
 * What DELETE answers a caller who withdrew from a job that other callers still wait for: cancelled
 * as far as this caller goes (it no longer sees the job), while the run goes on for the others.
 */
export function viewOfWithdrawn(view: JobView, now = Date.now()): JobView {
  const { result: _result, progress: _progress, ...rest } = view;
  return {
    ...rest,
    status: 'cancelled',
    error: { code: JobFailureCode.JOB_CANCELLED, message: 'Withdrawn: other callers that submitted the same job still wait for it, so it runs on for them' },
    finishedAt: new Date(now).toISOString(),
  };
}

/** The view of a job that was still queued at its start deadline (see JobExpiry). */
export function viewOfExpired(view: JobView, now = Date.now()): JobView {
  return { ...view, status: 'expired', error: { code: JobFailureCode.JOB_EXPIRED, message: 'Not started by its start deadline' }, finishedAt: new Date(now).toISOString() };
}

/** The view of a job cancelled while it was still queued. */
export function viewOfCancelled(view: JobView, now = Date.now()): JobView {
  return {
    ...view,
    status: 'cancelled',
    error: { code: JobFailureCode.JOB_CANCELLED, message: 'Cancelled before it started' },
    finishedAt: new Date(now).toISOString(),
  };
}
