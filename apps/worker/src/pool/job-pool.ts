import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { BroadcastChannel } from 'node:worker_threads';
import { Inject, Injectable, OnApplicationShutdown, Optional } from '@nestjs/common';
import Piscina from 'piscina';
import { CONFIG, type Config } from '@app/config';
import { CodedJobError, JobFailureCode, JobRegistry } from '@app/jobs';
import { type Logger, LOGGER } from '@app/logging';
import { SPAN_ATTRIBUTES, type SpanAttributeValue, type Tracing, TRACING } from '@app/tracing';
import { runTask } from './thread-task';
import { LOG_BURST, LOG_LEVELS, LOG_PER_SECOND, type LogLevelName } from './thread-log';
import type { ChannelMessage, LogMessage, ThreadData, ThreadFile, ThreadResult, ThreadStep, ThreadTask } from './thread-protocol';
import { idleThreadsStartedSince, schedIdleUnavailable, threadIds } from './thread-sched';
import { nowMs, startSpan } from './thread-span';

export interface RunOptions {
  attempt: number;
  /** `run` by default; `split` or `merge` for a fan-out job (see ThreadStep). */
  step?: ThreadStep;
  /** For `merge`: the children's results as a JSON array, in chunk order. */
  partsJson?: string;
  /** The caller's scope of a `share: 'caller'` job (see JobData.scope). */
  scope?: string;
  /** The files the job takes, and where its thread reads them (see InputFiles). */
  files?: Record<string, ThreadFile>;
  /** Its result may go to the blob store when large (see ThreadTask.storeLarge). */
  storeLarge?: boolean;
  /** Aborting terminates the thread running the job; `run` then rejects with `signal.reason`. */
  signal: AbortSignal;
  onProgress(percent: number): void;
  /** The logger the job's `ctx.log` lines go to, made on the first line. Without it they are dropped. */
  log?: () => Logger;
  /** With tracing on: attributes of the task's span (job id, request id). */
  spanAttributes?: Record<string, SpanAttributeValue | undefined>;
  /**
   * Run it on this event loop, not a thread (an inline type): nothing can stop it, so once it returns
   * it fails with the signal's reason if that came meanwhile, or as JOB_TIMEOUT past `timeoutMs`.
   */
  inline?: { timeoutMs: number };
}

/** Why a pool thread was terminated and replaced (nest_offload_pool_thread_replacements_total). */
export const REPLACEMENT_REASONS = ['timeout', 'cancelled', 'crash', 'out_of_memory'] as const;
export type ReplacementReason = (typeof REPLACEMENT_REASONS)[number];

/** Keys of a job's log line that the worker sets; a job's own fields cannot overwrite them. */
const RESERVED_FIELDS = ['level', 'time', 'pid', 'hostname', 'name', 'msg', 'context', 'jobId', 'requestId', 'type', 'attempt', 'threadId'];
const LEVEL_NAMES = new Map<number, LogLevelName>(Object.entries(LOG_LEVELS).map(([name, value]) => [value, name as LogLevelName]));
/** How long a finished task's log lines may still be in flight before its sink is dropped anyway. */
const LOG_LINGER_MS = 2000;
const PINO_LEVELS: Record<Config['logLevel'], number> = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60, silent: Infinity };

interface LogSink {
  make?: () => Logger;
  logger?: Logger;
  received: number;
  expected?: number;
}

/**
 * The piscina pool that runs job code. One thread per job at a time; a thread that is aborted,
 * crashes or runs out of memory is replaced, and only its own job fails.
 */
@Injectable()
export class JobPool implements OnApplicationShutdown {
  private readonly pool: Piscina<ThreadTask, ThreadResult>;
  private readonly channel: BroadcastChannel;
  private readonly logLevel: number;
  /** Where a task's progress and log lines arrive, from a thread (by the channel) or inline. */
  private readonly receive = (message: ChannelMessage): void => {
    if ('percent' in message) this.progressListeners.get(message.taskId)?.(message.percent);
    else this.receiveLog(message);
  };
  private readonly progressListeners = new Map<number, (percent: number) => void>();
  private readonly logSinks = new Map<number, LogSink>();
  private readonly replacedListeners: Array<(reason: ReplacementReason) => void> = [];
  private readonly droppedListeners: Array<(lines: number) => void> = [];
  /**
   * The native addons of the types whose runs load one (see JobDefinition.nativeModules), until this
   * thread has loaded them: before the type's first run goes to a pool thread. why then, not at
   * start-up: a worker that never runs the type never pays for them (sharp: ~0.3 s and ~20 MB).
   */
  private readonly nativeModules: Map<string, readonly string[]>;
  /** The types whose runs load a native module, when pool threads are on SCHED_IDLE: the threads such a run starts join them (idleThreadsStartedSince). */
  private readonly idleNative: ReadonlySet<string>;
  private nextTaskId = 0;
  private closed = false;

  constructor(
    @Inject(CONFIG) config: Config,
    @Inject(LOGGER) logger: Logger,
    @Optional() @Inject(TRACING) private readonly tracing: Tracing | null = null,
  ) {
    const idleUnavailable = config.workerSched === 'idle' ? schedIdleUnavailable() : undefined;
    if (idleUnavailable) logger.warn(`WORKER_SCHED=idle: ${idleUnavailable}; pool threads stay on SCHED_OTHER at nice ${config.workerNice}`);
    const workerData: ThreadData = {
      progressChannel: `nest-offload-progress-${randomUUID()}`,
      logLevel: PINO_LEVELS[config.logLevel] ?? LOG_LEVELS.info,
      sched: config.workerSched === 'idle' && !idleUnavailable ? 'idle' : 'other',
      ...(config.blobStore && { blobStore: config.blobStore }),
    };
    this.logLevel = workerData.logLevel;
    this.channel = new BroadcastChannel(workerData.progressChannel);
    this.channel.unref();
    this.channel.onmessage = (event) => this.receive((event as { data: ChannelMessage }).data);
    const native = JobRegistry.forConfig(config).list().filter((def) => def.nativeModules.length > 0);
    this.nativeModules = new Map(native.map((def) => [def.name, def.nativeModules]));
    this.idleNative = new Set(workerData.sched === 'idle' ? native.map((def) => def.name) : []);
    this.pool = new Piscina({
      workerData,
      filename: join(__dirname, 'thread.js'),
      minThreads: config.workerThreads,
      maxThreads: config.workerThreads,
      // why: BullMQ's concurrency equals the thread count, so tasks never queue here for long;
      // a bound still turns a bug into an error instead of unbounded memory.
      maxQueue: config.workerThreads * 2,
      // why: job threads yield the CPU to the event loops (ours, and any co-located API) on a shared host.
      niceIncrement: config.workerNice,
      resourceLimits: { maxOldGenerationSizeMb: config.workerMaxMemoryMb },
    });
    // why: errors outside any task (a thread failing to start) would otherwise crash the process;
    // the jobs they affect fail through their own promises.
    this.pool.on('error', (error: unknown) => logger.error({ err: error }, 'pool thread error'));
  }

  /**
   * Runs version `version` of job type `name` on a pool thread: its result, and the content key of
   * the input as the thread validated it (what the result may be cached under).
   */
  async run(name: string, version: number, inputJson: string, options: RunOptions): Promise<{ value: unknown; key: string }> {
    const native = this.nativeModules.get(name);
    if (native) {
      for (const module of native) require(module);
      this.nativeModules.delete(name);
    }
    const taskId = ++this.nextTaskId;
    const step = options.step ?? 'run';
    const traceparent = this.tracing?.traceparent();
    const task: ThreadTask = {
      step,
      taskId,
      name,
      version,
      inputJson,
      scope: options.scope,
      files: options.files,
      attempt: options.attempt,
      partsJson: options.partsJson,
      storeLarge: options.storeLarge,
    };
    if (traceparent) {
      const attributes: Record<string, SpanAttributeValue | undefined> = {
        ...options.spanAttributes,
        [SPAN_ATTRIBUTES.jobType]: name,
        [SPAN_ATTRIBUTES.jobAttempt]: options.attempt,
        [SPAN_ATTRIBUTES.jobStep]: step,
      };
      task.trace = { traceparent, attributes: Object.fromEntries(Object.entries(attributes).filter((e): e is [string, SpanAttributeValue] => e[1] !== undefined)) };
    }
    const dispatchedMs = nowMs();
    this.progressListeners.set(taskId, options.onProgress);
    this.logSinks.set(taskId, { make: options.log, received: 0 });
    let result: ThreadResult | undefined;
    const threadsBefore = !options.inline && this.idleNative.has(name) ? threadIds() : undefined;
    try {
      result = options.inline ? await this.runInline(task, options.signal, options.inline.timeoutMs) : await this.pool.run(task, { signal: options.signal });
      if (result.span) this.tracing?.exportSpan(result.span);
      if (!result.ok) throw new CodedJobError(result.code, result.message);
      return { value: result.value, key: result.key };
    } catch (error) {
      const explained = options.inline ? error : this.explain(error, options.signal);
      // The thread was terminated or died: its span never came back, so the attempt gets one from here.
      if (task.trace && !result) {
        const span = startSpan(task.trace.traceparent, `${step} ${name}`, task.trace.attributes, dispatchedMs);
        if (span) this.tracing!.exportSpan(span.end(explained instanceof Error ? explained.message : String(explained)));
      }
      throw explained;
    } finally {
      this.progressListeners.delete(taskId);
      this.settleLog(taskId, result?.posted);
      // why awaited: the job completes with its run's threads already on SCHED_IDLE.
      if (threadsBefore) await idleThreadsStartedSince(threadsBefore);
    }
  }

  /** Calls `listener` each time a thread is terminated and replaced. */
  onThreadReplaced(listener: (reason: ReplacementReason) => void): void {
    this.replacedListeners.push(listener);
  }

  /** Calls `listener` with the count each time a job's log lines were dropped by the rate limit. */
  onLogLinesDropped(listener: (lines: number) => void): void {
    this.droppedListeners.push(listener);
  }

  get threads(): number {
    return this.pool.threads.length;
  }

  get utilization(): number {
    return this.pool.utilization;
  }

  get alive(): boolean {
    return !this.closed;
  }

  async onApplicationShutdown(): Promise<void> {
    this.closed = true;
    await this.pool.destroy();
    this.channel.close();
  }

  /**
   * Runs a task of an inline type here, on the event loop; its progress and log lines take the
   * thread's way in. Nothing can stop it, so a cancel or the timeout that came while it ran (an
   * async run) takes effect once it returns, and a synchronous run is checked against its time.
   */
  private async runInline(task: ThreadTask, signal: AbortSignal, timeoutMs: number): Promise<ThreadResult> {
    signal.throwIfAborted();
    const started = performance.now();
    const result = await runTask(task, this.receive, 0, this.logLevel);
    signal.throwIfAborted();
    const ms = performance.now() - started;
    if (ms > timeoutMs) throw new CodedJobError(JobFailureCode.JOB_TIMEOUT, `the job ran ${Math.round(ms)} ms on the worker's event loop, longer than its ${timeoutMs} ms`);
    return result;
  }

  /** Writes a job's log line (or its drop count) through the job's logger. */
  private receiveLog(message: LogMessage): void {
    const sink = this.logSinks.get(message.taskId);
    if (!sink) return;
    sink.received++;
    if (sink.expected !== undefined && sink.received >= sink.expected) this.logSinks.delete(message.taskId);
    if ('dropped' in message) for (const listener of this.droppedListeners) listener(message.dropped);
    const logger = (sink.logger ??= sink.make?.());
    if (!logger) return;
    if ('dropped' in message) {
      logger.warn({ threadId: message.threadId, dropped: message.dropped }, `job log lines dropped by the rate limit (${LOG_BURST} at once, then ${LOG_PER_SECOND}/s)`);
      return;
    }
    const fields = message.fieldsJson ? (JSON.parse(message.fieldsJson) as Record<string, unknown>) : {};
    for (const key of RESERVED_FIELDS) delete fields[key];
    logger[LEVEL_NAMES.get(message.level) ?? 'info']({ ...fields, threadId: message.threadId }, message.msg);
  }

  /**
   * Forgets a finished task's log sink once its lines have all arrived. why count: they travel on the
   * channel, the result through piscina's port, and the two are not ordered with each other.
   */
  private settleLog(taskId: number, posted: number | undefined): void {
    const sink = this.logSinks.get(taskId);
    if (!sink) return;
    sink.expected = posted;
    if (posted !== undefined && sink.received >= posted) this.logSinks.delete(taskId);
    else setTimeout(() => this.logSinks.get(taskId) === sink && this.logSinks.delete(taskId), LOG_LINGER_MS).unref();
  }

  private explain(error: unknown, signal: AbortSignal): unknown {
    if (error instanceof CodedJobError) return error;
    if (signal.aborted) {
      this.replaced((signal.reason as { code?: string } | undefined)?.code === JobFailureCode.JOB_TIMEOUT ? 'timeout' : 'cancelled');
      return signal.reason;
    }
    const { code, message } = error as { code?: string; message?: string };
    if (code === 'ERR_WORKER_OUT_OF_MEMORY') {
      this.replaced('out_of_memory');
      return new CodedJobError(JobFailureCode.JOB_OUT_OF_MEMORY, 'the job exceeded WORKER_MAX_MEMORY_MB; its thread was replaced');
    }
    this.replaced('crash');
    return new CodedJobError(JobFailureCode.JOB_CRASHED, `the job's thread died (${message ?? String(error)}); it was replaced`);
  }

  private replaced(reason: ReplacementReason): void {
    // why not while closing: destroying the pool ends every thread; none of them is replaced.
    if (this.closed) return;
    for (const listener of this.replacedListeners) listener(reason);
  }
}
