import type { ServerResponse } from 'node:http';
import { Lifecycle } from '@app/health';
import { JobEvents } from './job-events';
import { isFinal, JobView } from './job-view';

const HEARTBEAT_MS = 15_000;

/**
 * Streams one job as Server-Sent Events: `progress` while it runs, then exactly one of `completed`,
 * `failed` or `cancelled` carrying the final view, then the stream ends. A draining replica ends the
 * stream early without a final event; EventSource clients reconnect to another replica.
 */
export async function streamJob(
  res: ServerResponse,
  jobId: string,
  deps: { events: JobEvents; lifecycle: Lifecycle; load: (state?: string) => Promise<JobView> },
): Promise<void> {
  const write = (event: string, data: unknown) => res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  let wake: () => void = () => undefined;
  let closed = false;
  let settled = false;
  let settledState: string | undefined;
  let lastProgress: number | undefined;
  const pendingProgress: number[] = [];

  const unsubscribe = deps.events.subscribe(jobId, (event) => {
    if (event.kind === 'progress') pendingProgress.push(event.progress);
    else {
      settled = true;
      settledState = event.state;
    }
    wake();
  });
  const stop = () => {
    closed = true;
    wake();
  };
  const forget = deps.lifecycle.onShutdown(stop);
  res.on('close', stop);
  const heartbeat = setInterval(() => res.write(': keep-alive\n\n'), HEARTBEAT_MS);

  try {
    let view = await deps.load();
    while (!closed) {
      const signalled = new Promise<void>((resolve) => (wake = resolve));
      if (isFinal(view)) {
        write(view.status, view);
        break;
      }
      const progress = pendingProgress.splice(0).at(-1) ?? view.progress;
      if (progress !== undefined && progress !== lastProgress) {
        lastProgress = progress;
        write('progress', { id: jobId, progress });
      }
      await signalled;
      if (settled) {
        settled = false;
        view = await deps.load(settledState);
      }
    }
  } catch (error) {
    write('error', { message: error instanceof Error ? error.message : String(error) });
  } finally {
    clearInterval(heartbeat);
    forget();
    unsubscribe();
    res.end();
  }
}
