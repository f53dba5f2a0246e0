import { randomUUID } from 'node:crypto';
import { Inject, Injectable, OnModuleInit } from '@nestjs/common';
import { Cluster } from 'ioredis';
import { Gauge, Registry } from 'prom-client';
import { CONFIG, type Config } from '@app/config';
import { Lifecycle } from '@app/health';
import { JobRegistry } from '@app/jobs';
import { METRICS } from '@app/metrics';
import { decodeNotice, type JobRecord, noticeChannel, notify, watchersKey } from '@app/queue';
import { type RedisClient, RedisConnections } from '@app/redis';
import { QUEUE_REDIS } from '../queues/queue.providers';

/**
 * What a watcher hears about its job: progress; the job's final record (`final`, with the record
 * when the worker could send it); or a nudge to read the job again (`settled`: it changed in a way
 * the notice does not describe, or this replica may have missed notices while reconnecting).
 */
export type JobEvent = { kind: 'progress'; progress: number } | { kind: 'final'; state: 'completed' | 'failed'; record?: JobRecord } | { kind: 'settled' };

type Listener = (event: JobEvent) => void;

/** How long a watcher's registration outlives a job that never ends (lost, removed by hand). */
const WATCH_TTL_SECONDS = 24 * 3600;

/**
 * Notices of the jobs this replica waits on (`Prefer: wait`, event streams, joined submissions,
 * webhook deliveries, cancel confirmations), and only of those. Each replica listens on one sharded
 * pub/sub channel per queue (see noticeChannel); before it waits on a job it adds that channel to
 * the job's watchers in Redis, and the worker that ends the job, or reports its progress, publishes
 * there. A replica that waits on nothing receives nothing: the cost of a job does not grow with the
 * number of API replicas.
 *
 * Nothing is lost between a finish and a watch: a job this replica is about to add gets its
 * watcher on the same connection just before the add; a job that already exists is read after
 * the watcher is in place, so a finish before that is seen by the read. A replica that loses its
 * subscription (Redis restarts or fails over) tells every watcher to read its job again once it
 * has it back.
 */
@Injectable()
export class JobNotices implements OnModuleInit {
  /** This process's name in channel names. */
  readonly replicaId = randomUUID();
  private readonly listeners = new Map<string, Set<Listener>>();
  private readonly channels: Map<string, string>;
  private readonly subscriber: RedisClient;
  private lost = false;

  constructor(
    registry: JobRegistry,
    @Inject(CONFIG) private readonly config: Config,
    @Inject(QUEUE_REDIS) private readonly redis: RedisClient,
    private readonly lifecycle: Lifecycle,
    connections: RedisConnections,
    metrics: Registry,
  ) {
    const listeners = this.listeners;
    new Gauge({
      name: METRICS.jobsWatched,
      help: 'Jobs this API replica waits on (Prefer: wait, event streams, cancels, webhook deliveries); one that only grows is a leak',
      registers: [metrics],
      collect() {
        this.set(listeners.size);
      },
    });
    this.channels = new Map(registry.queues().map((queue) => [queue, noticeChannel(config.redisPrefix, queue, this.replicaId)]));
    // why a connection of its own: a subscribed connection runs nothing else.
    this.subscriber = connections.open('events', config.queueRedis, 'sharded-subscriber', 'nest-offload:api-notices');
  }

  onModuleInit(): void {
    this.subscriber.on('smessage', (_channel: string, message: string) => this.receive(message));
    // why: ioredis subscribes again by itself after a reconnect (on Cluster, on the shard's new
    // primary after a failover), but what was published meanwhile is gone: every watcher reads its
    // job again once the subscription is back.
    const resync = () => {
      for (const [id] of this.listeners) this.emit(id, { kind: 'settled' });
    };
    if (this.subscriber instanceof Cluster) {
      this.subscriber.on('subscribersReady', resync);
    } else {
      this.subscriber.on('close', () => (this.lost = true));
      this.subscriber.on('ready', () => {
        if (!this.lost) return;
        this.lost = false;
        resync();
      });
    }
    // why one call per queue: each queue's channel hashes to that queue's slot, and on Cluster one
    // SSUBSCRIBE takes channels of one slot. Not awaited: with Redis down at start-up ioredis
    // subscribes once it connects.
    for (const channel of this.channels.values()) void this.subscriber.ssubscribe(channel).catch(() => undefined);
  }

  /**
   * Registers this replica as a watcher of job `id` of `queue`, on `connection` (the one that will
   * add the job, for a job not added yet: Redis runs one connection's commands in order). Resolves
   * once Redis has it.
   */
  async register(queue: string, id: string, connection: RedisClient = this.redis): Promise<void> {
    const key = watchersKey(this.config.redisPrefix, queue, id);
    // why two commands, not a script: a script goes by its SHA, and a Redis that does not have it
    // yet (a new primary after a failover) gets it again only after the add that follows: a job
    // that ended in between would find no watcher. The worker deletes the set when the job ends;
    // the expiry covers a job that never does.
    await Promise.all([connection.sadd(key, this.channel(queue)), connection.expire(key, WATCH_TTL_SECONDS)]);
  }

  /**
   * Deletes the watcher sets of `ids` of `queue`, registered for jobs that were never added (the
   * submission joined another), on `connection` (the one that registered them).
   */
  async forget(queue: string, ids: readonly string[], connection: RedisClient = this.redis): Promise<void> {
    if (ids.length > 0) await connection.del(...ids.map((id) => watchersKey(this.config.redisPrefix, queue, id)));
  }

  /**
   * Tells the watchers of job `id` of `queue` to read it again, and forgets them: it ended without a
   * worker (cancelled while queued, by this replica).
   */
  async notifySettled(queue: string, id: string): Promise<void> {
    await notify(this.redis, this.config.redisPrefix, queue, { id, settled: true }, true);
  }

  /** Calls `listener` for every notice of job `id` until the returned function is called. */
  subscribe(id: string, listener: Listener): () => void {
    let set = this.listeners.get(id);
    if (!set) this.listeners.set(id, (set = new Set()));
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0 && this.listeners.get(id) === set) this.listeners.delete(id);
    };
  }

  /**
   * Starts listening to job `id` now (locally: call `register` for Redis to send its notices here),
   * so that nothing it does from here on is missed; call `until` to wait for it, or `close` to stop.
   */
  watch(id: string): JobWatch {
    return new JobWatch(this, id, this.lifecycle);
  }

  private channel(queue: string): string {
    const channel = this.channels.get(queue);
    if (!channel) throw new Error(`no queue named "${queue}"`);
    return channel;
  }

  private receive(message: string): void {
    const notice = decodeNotice(message);
    if (!notice || !this.listeners.has(notice.id)) return;
    if ('progress' in notice) this.emit(notice.id, { kind: 'progress', progress: notice.progress });
    else if ('final' in notice) this.emit(notice.id, { kind: 'final', state: notice.final, record: notice.record });
    else this.emit(notice.id, { kind: 'settled' });
  }

  private emit(id: string, event: JobEvent): void {
    const set = this.listeners.get(id);
    if (set) for (const listener of [...set]) listener(event);
  }
}

/** One request waiting for one job (`Prefer: wait`, DELETE's confirmation, a batch item). */
export class JobWatch {
  private pending?: JobEvent;
  private wake: () => void = () => undefined;
  private readonly unsubscribe: () => void;

  constructor(
    notices: JobNotices,
    id: string,
    private readonly lifecycle: Lifecycle,
  ) {
    this.unsubscribe = notices.subscribe(id, (event) => {
      if (event.kind === 'progress') return;
      this.pending = event;
      this.wake();
    });
  }

  /**
   * Resolves with the first view `isDone` accepts: from a final notice's record (`fromRecord`) when
   * it carries one, else read with `load` (`state` is the final state when a notice says it), or
   * with a fresh read when `timeoutMs` passes or the process starts draining. `initial`, when the
   * caller knows the view already (a job it has just queued), saves the first read.
   */
  async until<V>(
    timeoutMs: number,
    load: (state?: string) => Promise<V>,
    isDone: (view: V) => boolean,
    fromRecord: (record: JobRecord, state: 'completed' | 'failed') => V,
    initial?: V,
  ): Promise<V> {
    let expired = false;
    const expire = () => {
      expired = true;
      this.wake();
    };
    const timer = setTimeout(expire, timeoutMs);
    const forget = this.lifecycle.onShutdown(expire);
    try {
      let view: V = initial ?? (await load());
      for (;;) {
        if (isDone(view)) return view;
        if (expired) return load();
        if (!this.pending) await new Promise<void>((resolve) => (this.wake = () => resolve()));
        const event = this.pending;
        this.pending = undefined;
        if (event?.kind === 'final' && event.record) view = fromRecord(event.record, event.state);
        else if (event) view = await load(event.kind === 'final' ? event.state : undefined);
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
