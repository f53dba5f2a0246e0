import type { ServerResponse } from 'node:http';
import { Lifecycle } from '@app/health';
import { toProblem } from '../http/problem';
import type { JobRecord } from '@app/queue';
import { JobNotices } from './job-notices';
import { isFinal, JobView, viewOfJob } from './job-view';

const HEARTBEAT_MS = 15_000;
/** The reconnection delay EventSource clients are told to use (the `retry:` field). */
export const RECONNECT_MS = 1000;
/** The id of the final event; a reconnect that has seen it is answered 204, which stops EventSource. */
export const FINAL_EVENT_ID = 'final';

/**
 * The id of a progress event: the percentage itself. why derived from the job, not a counter: every
 * replica gives the same event the same id, so a client that reconnects to another replica with
 * `Last-Event-ID` is not sent again what it has already seen.
 */
export const progressEventId = (progress: number): string => String(progress);

/** True when a reconnecting client's `Last-Event-ID` says it has seen the final event. */
export const sawFinalEvent = (lastEventId: string | undefined): boolean => lastEventId === FINAL_EVENT_ID;

/**
 * One job as Server-Sent Events: `progress` while it runs, then exactly one of `completed`, `failed`
 * or `cancelled` carrying the final view, then the stream ends. Every event has an `id:` derived
 * from the job (see `progressEventId`, `FINAL_EVENT_ID`), so a client reconnecting to any replica
 * resumes where it was. A draining replica ends the stream early without a final event; EventSource
 * clients reconnect to another replica.
 *
 * It listens from construction, before the caller registers this replica as a watcher of the job
 * and reads it, so nothing the job does in between is missed.
 */
export class JobStream {
  private wake: () => void = () => undefined;
  private settled = false;
  private settledState?: string;
  private settledRecord?: JobRecord;
  private readonly pendingProgress: number[] = [];
  private readonly unsubscribe: () => void;

  constructor(
    notices: JobNotices,
    private readonly jobId: string,
  ) {
    this.unsubscribe = notices.subscribe(jobId, (event) => {
      if (event.kind === 'progress') this.pendingProgress.push(event.progress);
      else {
        this.settled = true;
        this.settledState = event.kind === 'final' ? event.state : undefined;
        this.settledRecord = event.kind === 'final' ? event.record : undefined;
      }
      this.wake();
    });
  }

  /**
   * Writes the stream to `res`, starting from `view`, re-reading the job with `load` when it settles.
   * The final view goes through `seen` first (what the caller may see of it now: a caller that has
   * withdrawn meanwhile gets its own cancelled view, not the result). `lastEventId` is the client's
   * `Last-Event-ID` on a reconnect: progress it has already seen is not sent again.
   */
  async pipe(
    res: ServerResponse,
    view: JobView,
    load: (state?: string) => Promise<JobView>,
    seen: (final: JobView) => Promise<JobView>,
    lifecycle: Lifecycle,
    lastEventId?: string,
  ): Promise<void> {
    const write = (event: string, data: unknown, id?: string) =>
      res.write(`${id === undefined ? '' : `id: ${id}\n`}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
    let closed = false;
    const stop = () => {
      closed = true;
      this.wake();
    };
    const forget = lifecycle.onShutdown(stop);
    res.on('close', stop);
    res.write(`retry: ${RECONNECT_MS}\n\n`);
    const heartbeat = setInterval(() => res.write(': keep-alive\n\n'), HEARTBEAT_MS);
    let lastId = lastEventId;
    try {
      while (!closed) {
        const signalled = new Promise<void>((resolve) => (this.wake = resolve));
        if (this.settled) {
          this.settled = false;
          // The notice that ends the job carries it: no read, unless it was too large to send.
          view = this.settledRecord && this.settledState ? viewOfJob(this.settledRecord, this.settledState) : await load(this.settledState);
        }
        if (isFinal(view)) {
          view = await seen(view);
          write(view.status, view, FINAL_EVENT_ID);
          break;
        }
        const progress = this.pendingProgress.splice(0).at(-1) ?? view.progress;
        if (progress !== undefined && progressEventId(progress) !== lastId) {
          lastId = progressEventId(progress);
          write('progress', { id: this.jobId, progress }, lastId);
        }
        await signalled;
      }
    } catch (error) {
      // why the problem's code and detail, not the error's message: that could carry internals.
      const { code, detail } = toProblem(error).body;
      write('error', { code, message: detail });
    } finally {
      clearInterval(heartbeat);
      forget();
      this.close();
      res.end();
    }
  }

  close(): void {
    this.unsubscribe();
  }
}
