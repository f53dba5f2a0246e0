import { Injectable, OnModuleInit } from '@nestjs/common';
import { QueueEvents } from 'bullmq';
import { Lifecycle } from '@app/health';

export type JobEvent = { kind: 'progress'; progress: number } | { kind: 'settled' };

type Listener = (event: JobEvent) => void;

/**
 * Fans BullMQ's event stream out to the requests that watch one job (SSE, `Prefer: wait`, cancel).
 * One QueueEvents reader per API process serves them all; the stream lives in Redis, so a job run
 * by any worker is seen by every API replica.
 */
@Injectable()
export class JobEvents implements OnModuleInit {
  private readonly listeners = new Map<string, Set<Listener>>();

  constructor(
    private readonly queueEvents: QueueEvents,
    private readonly lifecycle: Lifecycle,
  ) {}

  onModuleInit(): void {
    const settled = ({ jobId }: { jobId: string }) => this.emit(jobId, { kind: 'settled' });
    this.queueEvents
      .on('progress', ({ jobId, data }) => {
        if (typeof data === 'number') this.emit(jobId, { kind: 'progress', progress: data });
      })
      // why: "failed" also fires for an attempt that will be retried, and "removed" for a cancelled
      // queued job; a listener re-reads the job's state rather than trusting the event's meaning.
      .on('completed', settled)
      .on('failed', settled)
      .on('removed', settled)
      .on('retries-exhausted', settled);
  }

  /** Calls `listener` for every event of `jobId` until the returned function is called. */
  subscribe(jobId: string, listener: Listener): () => void {
    let set = this.listeners.get(jobId);
    if (!set) this.listeners.set(jobId, (set = new Set()));
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0 && this.listeners.get(jobId) === set) this.listeners.delete(jobId);
    };
  }

  /**
   * Resolves with the first view that `isDone` accepts, re-reading it with `load` after every
   * settling event, or with the last view read when `timeoutMs` passes or the process starts draining.
   */
  async waitFor<V>(jobId: string, timeoutMs: number, load: () => Promise<V>, isDone: (view: V) => boolean): Promise<V> {
    let wake: () => void = () => undefined;
    const unsubscribe = this.subscribe(jobId, (event) => {
      if (event.kind === 'settled') wake();
    });
    let expired = false;
    const timer = setTimeout(() => {
      expired = true;
      wake();
    }, timeoutMs);
    const forget = this.lifecycle.onShutdown(() => {
      expired = true;
      wake();
    });
    try {
      for (;;) {
        const signalled = new Promise<void>((resolve) => (wake = resolve));
        const view = await load();
        if (expired || isDone(view)) return view;
        await signalled;
      }
    } finally {
      clearTimeout(timer);
      forget();
      unsubscribe();
    }
  }

  get watched(): number {
    return this.listeners.size;
  }

  private emit(jobId: string, event: JobEvent): void {
    const set = this.listeners.get(jobId);
    if (set) for (const listener of [...set]) listener(event);
  }
}
