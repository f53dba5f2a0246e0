import type { ServerResponse } from 'node:http';
import { Lifecycle } from '@app/health';
import { JobEvents } from './job-events';
import { isFinal, JobView } from './job-view';

const HEARTBEAT_MS = 15_000;

/**
 * One job as Server-Sent Events: `progress` while it runs, then exactly one of `completed`, `failed`
 * or `cancelled` carrying the final view, then the stream ends. A draining replica ends the stream
 * early without a final event; EventSource clients reconnect to another replica.
 *
 * It listens from construction, before the caller's first read of the job, so nothing the job does
 * in between is missed.
 */
export class JobStream {
  private wake: () => void = () => undefined;
  private settled = false;
  private settledState?: string;
  private readonly pendingProgress: number[] = [];
  private readonly unsubscribe: () => void;

  constructor(
    events: JobEvents,
    private readonly jobId: string,
  ) {
    this.unsubscribe = events.subscribe(jobId, (event) => {
      if (event.kind === 'progress') this.pendingProgress.push(event.progress);
      else {
        this.settled = true;
        this.settledState = event.state;
      }
      this.wake();
    });
  }

  /** Writes the stream to `res`, starting from `view`, re-reading the job with `load` when it settles. */
  async pipe(res: ServerResponse, view: JobView, load: (state?: string) => Promise<JobView>, lifecycle: Lifecycle): Promise<void> {
    const write = (event: string, data: unknown) => res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
    let closed = false;
    const stop = () => {
      closed = true;
      this.wake();
    };
    const forget = lifecycle.onShutdown(stop);
    res.on('close', stop);
    const heartbeat = setInterval(() => res.write(': keep-alive\n\n'), HEARTBEAT_MS);
    let lastProgress: number | undefined;
    try {
      while (!closed) {
        const signalled = new Promise<void>((resolve) => (this.wake = resolve));
        if (this.settled) {
          this.settled = false;
          view = await load(this.settledState);
        }
        if (isFinal(view)) {
          write(view.status, view);
          break;
        }
        const progress = this.pendingProgress.splice(0).at(-1) ?? view.progress;
        if (progress !== undefined && progress !== lastProgress) {
          lastProgress = progress;
          write('progress', { id: this.jobId, progress });
        }
        await signalled;
      }
    } catch (error) {
      write('error', { message: error instanceof Error ? error.message : String(error) });
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
