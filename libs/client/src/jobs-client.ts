import type { JobName, SubmissionOf } from '@app/jobs';
import type { JobEvent, JobFile, JobTypeInfo, JobView } from './job-view';
import { type FileBody, type FilePart, multipartOf } from './multipart';
import { ProblemError } from './problem-error';
import { retryDelay, type RetryPolicy } from './retry';
import { readSse } from './sse';

export interface JobsClientOptions {
  /** Where the API is, e.g. `http://jobs-api:3000`. */
  baseUrl: string;
  /** Sent as `Authorization: Bearer <apiKey>` (the API's API_KEYS). */
  apiKey?: string;
  /** Limit of each call, retries included (10,000 ms). `submitAndWait` adds its wait to it. */
  timeoutMs?: number;
  /** Attempts after the first on a 429 or 503 (2). */
  retries?: number;
  /** Longest `Retry-After` the client waits out (30,000 ms); when the API asks for longer, the 429 or 503 is thrown. */
  maxRetryDelayMs?: number;
  /** The fetch to use (the global one by default). */
  fetch?: typeof fetch;
}

export interface CallOptions {
  /** Aborts the call, waits between retries included. */
  signal?: AbortSignal;
  /** This call's limit, instead of the client's `timeoutMs`; 0 for none. */
  timeoutMs?: number;
}

export interface SubmitOptions extends CallOptions {
  /** A start deadline (`Start-Within`): still queued this many seconds after submission, the job ends `expired` unrun. */
  startWithinSeconds?: number;
  /**
   * The files the type takes, by name (e.g. `{ image: buffer }`): sent as multipart/form-data. Bytes
   * (a Blob, a Buffer) are resent on a retry; a stream is sent once, so a 429 or 503 is then thrown.
   */
  files?: Readonly<Record<string, FileBody | FilePart>>;
}

export type { FileBody, FilePart };

export interface WaitOptions extends SubmitOptions {
  /** How long the API may hold the request for the job to finish (`Prefer: wait`; 30 s, and capped by its MAX_WAIT_SECONDS). */
  waitSeconds?: number;
}

const FINAL_EVENTS = new Set(['completed', 'failed', 'cancelled', 'expired']);
/** Pause before reopening an event stream that a replica closed without a final event (it was shutting down). */
const RECONNECT_MS = 250;

/**
 * The HTTP API of nest-offload, typed by the job declarations: `submit('fibonacci', { n: 10 })` checks
 * the input against fibonacci's schema and types the completed view's `result` by its output. Errors are
 * `ProblemError`s; a timeout or abort rejects with the signal's reason (a `TimeoutError` or
 * `AbortError` DOMException). 429 and 503 answers are retried after their `Retry-After`.
 */
export class JobsClient {
  private readonly baseUrl: string;
  private readonly timeoutMs: number;
  private readonly policy: RetryPolicy;
  private readonly fetch: typeof fetch;

  constructor(private readonly options: JobsClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.policy = { retries: options.retries ?? 2, maxDelayMs: options.maxRetryDelayMs ?? 30_000 };
    this.fetch = options.fetch ?? ((input, init) => fetch(input, init));
  }

  /** Submits a job: the completed view on a cache hit, else the queued (or joined) job's view. */
  async submit<N extends JobName>(type: N, input: SubmissionOf<N>, options: SubmitOptions = {}): Promise<JobView<N>> {
    return this.json<JobView<N>>('POST', `/v1/jobs/${encodeURIComponent(type)}`, options, { ...submitBody(input, options), headers: submitHeaders(options) });
  }

  /**
   * Submits a job and lets the API hold the answer until it finishes or `waitSeconds` pass: the final
   * view (completed, failed, cancelled or expired) when it finished in time, else its current one.
   */
  async submitAndWait<N extends JobName>(type: N, input: SubmissionOf<N>, options: WaitOptions = {}): Promise<JobView<N>> {
    const waitSeconds = options.waitSeconds ?? 30;
    const timeoutMs = options.timeoutMs ?? this.timeoutMs + waitSeconds * 1000;
    return this.json<JobView<N>>('POST', `/v1/jobs/${encodeURIComponent(type)}`, { ...options, timeoutMs }, { ...submitBody(input, options), headers: { ...submitHeaders(options), prefer: `wait=${waitSeconds}` } });
  }

  /**
   * A file a completed job returned (an entry of its view's `files`), as a Response to read as a
   * stream (`body`), `arrayBuffer()` or `blob()`: from the API, or from the S3 store its `303`
   * points to (followed without the API key). No time limit unless `timeoutMs` or `signal` sets one.
   */
  async download(file: Pick<JobFile, 'url'>, options: CallOptions = {}): Promise<Response> {
    const call = this.callOf({ ...options, timeoutMs: options.timeoutMs ?? 0 });
    const res = await this.send('GET', file.url, call, { accept: '*/*' }, undefined, 'manual');
    const location = res.headers.get('location');
    if (res.status === 303 && location) {
      const stored = await this.fetch(new URL(location, this.baseUrl).href, { signal: call.signal });
      if (!stored.ok) throw await ProblemError.fromResponse(stored);
      return stored;
    }
    // A browser hides a redirect it was told not to follow: follow it then (it drops the API key for another origin).
    return res.type === 'opaqueredirect' ? this.send('GET', file.url, call, { accept: '*/*' }) : res;
  }

  /** The job's current view; given a view (or `{id, type}`) rather than an id, typed by its job type. */
  async get<N extends JobName = JobName>(job: JobRef<N>, options: CallOptions = {}): Promise<JobView<N>> {
    return this.json<JobView<N>>('GET', `/v1/jobs/${idOf(job)}`, options);
  }

  /**
   * Cancels the job: its cancelled view, or (`status` still `active`) its view while the worker
   * running it has not confirmed yet. A job that already finished is a `409 JOB_ALREADY_FINISHED`,
   * which is also what a retry after a 503 answers when the first attempt did cancel it.
   */
  async cancel<N extends JobName = JobName>(job: JobRef<N>, options: CallOptions = {}): Promise<JobView<N>> {
    return this.json<JobView<N>>('DELETE', `/v1/jobs/${idOf(job)}`, options);
  }

  /** Every job type the API serves. */
  async jobTypes(options: CallOptions = {}): Promise<JobTypeInfo[]> {
    return this.json<JobTypeInfo[]>('GET', '/v1/job-types', options);
  }

  /**
   * The job's events: `progress` while it runs, then one final event carrying its view, then the end.
   * No time limit unless `timeoutMs` or `signal` sets one. A stream a replica ends early (it is
   * shutting down) is reopened, on whichever replica answers; stopping the loop closes it.
   */
  async *events<N extends JobName = JobName>(job: JobRef<N>, options: CallOptions = {}): AsyncGenerator<JobEvent<N>> {
    const id = typeof job === 'string' ? job : job.id;
    const stop = new AbortController();
    const call = this.callOf({ ...options, timeoutMs: options.timeoutMs ?? 0 }, stop.signal);
    try {
      // Streams in a row that ended with no event at all; a stream with progress in it resets the count.
      for (let fruitless = 0; ; ) {
        const res = await this.send('GET', `/v1/jobs/${idOf(job)}/events`, call, { accept: 'text/event-stream' });
        let heard = false;
        for await (const message of readSse(res.body!)) {
          heard = true;
          const data = JSON.parse(message.data) as Record<string, unknown>;
          if (message.event === 'progress') yield { event: 'progress', progress: data.progress as number };
          else if (FINAL_EVENTS.has(message.event)) {
            yield { event: message.event, job: data } as unknown as JobEvent<N>;
            return;
          } else if (message.event === 'error') throw new Error(`Event stream of job ${id} failed: ${String(data.message)}`);
        }
        fruitless = heard ? 0 : fruitless + 1;
        if (fruitless > this.policy.retries) throw new Error(`Event stream of job ${id} ended ${fruitless} times in a row without an event`);
        await sleep(RECONNECT_MS, call.signal);
      }
    } finally {
      stop.abort();
    }
  }

  private async json<T>(method: string, path: string, options: CallOptions, extra: { body?: unknown; form?: Body; headers?: Record<string, string> } = {}): Promise<T> {
    const call = this.callOf(options);
    const headers: Record<string, string> = { accept: 'application/json', ...extra.headers };
    const body: Body | undefined = extra.form ?? (extra.body === undefined ? undefined : { body: JSON.stringify(extra.body), contentType: 'application/json' });
    const res = await this.send(method, path, call, headers, body);
    return (await res.json()) as T;
  }

  /** One call: retried on 429 and 503 after their Retry-After (unless its body is a stream); any other non-2xx is a ProblemError. */
  private async send(method: string, path: string, { signal, deadline }: Call, headers: Record<string, string>, body?: Body, redirect?: 'manual'): Promise<Response> {
    if (body?.contentType) headers['content-type'] = body.contentType;
    if (this.options.apiKey) headers.authorization = `Bearer ${this.options.apiKey}`;
    const streamed = body?.body instanceof ReadableStream;
    // why duplex: a fetch with a stream as its body must say so (Node's fetch refuses it otherwise).
    const init = { method, headers, body: body?.body, signal, ...(redirect && { redirect }), ...(streamed && { duplex: 'half' }) } as RequestInit;
    for (let retry = 0; ; retry++) {
      const res = await this.fetch(`${this.baseUrl}${path}`, init);
      if (res.ok || (redirect === 'manual' && (res.status === 303 || res.type === 'opaqueredirect'))) return res;
      const delay = streamed ? undefined : retryDelay(res.status, res.headers.get('retry-after'), retry, this.policy, deadline - Date.now());
      const problem = await ProblemError.fromResponse(res);
      if (delay === undefined) throw problem;
      await sleep(delay, signal);
    }
  }

  /** The call's signal (the caller's, its time limit and `inner`, whichever aborts first) and deadline. */
  private callOf(options: CallOptions, inner?: AbortSignal): Call {
    const timeoutMs = options.timeoutMs ?? this.timeoutMs;
    const signals = [options.signal, inner, timeoutMs > 0 ? AbortSignal.timeout(timeoutMs) : undefined].filter((s) => s !== undefined);
    return { signal: AbortSignal.any(signals), deadline: timeoutMs > 0 ? Date.now() + timeoutMs : Infinity };
  }
}

/** A request body, and its content type when the fetch does not set it itself (a FormData's). */
interface Body {
  body: string | FormData | ReadableStream<Uint8Array>;
  contentType?: string;
}

/** A submission's body: its input as JSON, or with files, the multipart/form-data of both. */
function submitBody(input: unknown, options: SubmitOptions): { body?: unknown; form?: Body } {
  return options.files ? { form: multipartOf(input, options.files) } : { body: input };
}

/** The headers of a submission's options. */
function submitHeaders(options: SubmitOptions): Record<string, string> {
  return options.startWithinSeconds === undefined ? {} : { 'start-within': String(options.startWithinSeconds) };
}

/** A job by id, or by its view (or `{id, type}`), which types what comes back. */
export type JobRef<N extends JobName> = string | { id: string; type: N };

const idOf = (job: JobRef<JobName>) => encodeURIComponent(typeof job === 'string' ? job : job.id);

interface Call {
  signal: AbortSignal;
  deadline: number;
}

/** Waits `ms`, or rejects with the signal's reason when it aborts first. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
