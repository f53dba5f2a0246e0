import { Inject, Injectable, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { QueueEvents } from 'bullmq';
import { CONFIG, type Config } from '@app/config';
import { Lifecycle } from '@app/health';
import { JobRegistry } from '@app/jobs';
import { queuePrefix } from '@app/queue';
import { closeRedis, createRedis, type RedisClient } from '@app/redis';

/**
 * `settled`: the job finished, or moved in a way its watchers should re-read it for. `state` is set
 * when the event itself says where the job is now: BullMQ emits "completed" and "failed" only when
 * it moves a job to that final state (a failed attempt that will be retried emits "delayed").
 */
export type JobEvent = { kind: 'progress'; progress: number } | { kind: 'settled'; state?: 'completed' | 'failed' };

type Listener = (event: JobEvent) => void;

/**
 * Fans BullMQ's event streams out to the requests that watch one job (SSE, `Prefer: wait`, cancel).
 * One QueueEvents reader per queue and API process serves them all; the streams live in Redis, so a
 * job run by any worker is seen by every API replica. Job ids are unique across queues.
 */
@Injectable()
export class JobEvents implements OnModuleInit, OnApplicationShutdown {
  private readonly listeners = new Map<string, Set<Listener>>();
  private readonly readers: Array<{ events: QueueEvents; connection: RedisClient }>;

  constructor(
    registry: JobRegistry,
    @Inject(CONFIG) config: Config,
    private readonly lifecycle: Lifecycle,
  ) {
    this.readers = registry.queues().map((name) => {
      // why a connection each: QueueEvents holds a blocking XREAD open on its queue's stream.
      const connection = createRedis(config.queueRedis, 'blocking', `nest-offload:api-events:${name}`);
      const events = new QueueEvents(name, { connection, prefix: queuePrefix(config.redisPrefix, name) }).on('error', () => undefined);
      return { events, connection };
    });
  }

  /** The Redis connections of the event readers, one per queue (for the connection metric). */
  get connections(): RedisClient[] {
    return this.readers.map(({ connection }) => connection);
  }

  onModuleInit(): void {
    for (const { events } of this.readers) this.listen(events);
  }

  /** Runs after the HTTP server has drained (Nest's last shutdown hook). */
  async onApplicationShutdown(): Promise<void> {
    await Promise.allSettled(this.readers.map(({ events }) => events.close()));
    await Promise.allSettled(this.readers.map(({ connection }) => closeRedis(connection)));
  }

  private listen(events: QueueEvents): void {
    events
      .on('progress', ({ jobId, data }) => {
        if (typeof data === 'number') this.emit(jobId, { kind: 'progress', progress: data });
      })
      .on('completed', ({ jobId }) => this.emit(jobId, { kind: 'settled', state: 'completed' }))
      .on('failed', ({ jobId }) => this.emit(jobId, { kind: 'settled', state: 'failed' }))
      // A queued job removed by a cancel: its watchers find the cancelled view.
      .on('removed', ({ jobId }) => this.emit(jobId, { kind: 'settled' }));
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
   * Starts listening to job `jobId` now, so that nothing it does from here on is missed; call
   * `until` to wait for it, or `close` to stop.
   */
  watch(jobId: string): JobWatch {
    return new JobWatch(this, jobId, this.lifecycle);
  }

  get watched(): number {
    return this.listeners.size;
  }

  private emit(jobId: string, event: JobEvent): void {
    const set = this.listeners.get(jobId);
    if (set) for (const listener of [...set]) listener(event);
  }
}

/** One request waiting for one job (`Prefer: wait`, DELETE's confirmation). */
export class JobWatch {
  private settled = false;
  private state?: string;
  private wake: () => void = () => undefined;
  private readonly unsubscribe: () => void;

  constructor(
    events: JobEvents,
    jobId: string,
    private readonly lifecycle: Lifecycle,
  ) {
    this.unsubscribe = events.subscribe(jobId, (event) => {
      if (event.kind !== 'settled') return;
      this.settled = true;
      this.state = event.state;
      this.wake();
    });
  }

  /**
   * Resolves with the first view `isDone` accepts, re-reading it with `load` after each settling
   * event, or with a fresh read when `timeoutMs` passes or the process starts draining. `initial`,
   * when the caller already knows the view (a job it has just queued), saves the first read.
   */
  async until<V>(timeoutMs: number, load: (state?: string) => Promise<V>, isDone: (view: V) => boolean, initial?: V): Promise<V> {
    let expired = false;
    const expire = () => {
      expired = true;
      this.wake();
    };
    const timer = setTimeout(expire, timeoutMs);
    const forget = this.lifecycle.onShutdown(expire);
    try {
      let view = initial ?? (await load());
      for (;;) {
        if (expired || isDone(view)) return view;
        if (!this.settled) await new Promise<void>((resolve) => (this.wake = resolve));
        this.settled = false;
        view = await load(this.state);
      }
    } finally {
      clearTimeout(timer);
      forget();
      this.close();
    }
  }

  close(): void {
    this.unsubscribe();
  }
}
