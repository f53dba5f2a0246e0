import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { BroadcastChannel } from 'node:worker_threads';
import { Inject, Injectable, OnApplicationShutdown } from '@nestjs/common';
import Piscina from 'piscina';
import { CONFIG, type Config } from '@app/config';
import { CodedJobError, JobFailureCode } from '@app/jobs';
import { type Logger, LOGGER } from '@app/logging';
import type { ProgressMessage, ThreadData, ThreadResult, ThreadStep, ThreadTask } from './thread-protocol';

export interface RunOptions {
  attempt: number;
  /** `run` by default; `split` or `merge` for a fan-out job (see ThreadStep). */
  step?: ThreadStep;
  /** For `merge`: the children's results as a JSON array, in chunk order. */
  partsJson?: string;
  /** Aborting terminates the thread running the job; `run` then rejects with `signal.reason`. */
  signal: AbortSignal;
  onProgress(percent: number): void;
}

/**
 * The piscina pool that runs job code. One thread per job at a time; a thread that is aborted,
 * crashes or runs out of memory is replaced, and only its own job fails.
 */
@Injectable()
export class JobPool implements OnApplicationShutdown {
  private readonly pool: Piscina<ThreadTask, ThreadResult>;
  private readonly progress: BroadcastChannel;
  private readonly progressListeners = new Map<number, (percent: number) => void>();
  private nextTaskId = 0;
  private closed = false;

  constructor(@Inject(CONFIG) config: Config, @Inject(LOGGER) logger: Logger) {
    const workerData: ThreadData = { progressChannel: `nest-offload-progress-${randomUUID()}` };
    this.progress = new BroadcastChannel(workerData.progressChannel);
    this.progress.unref();
    this.progress.onmessage = (event) => {
      const { taskId, percent } = (event as { data: ProgressMessage }).data;
      this.progressListeners.get(taskId)?.(percent);
    };
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

  /** Runs version `version` of job type `name` on a pool thread. */
  async run(name: string, version: number, inputJson: string, options: RunOptions): Promise<unknown> {
    const taskId = ++this.nextTaskId;
    this.progressListeners.set(taskId, options.onProgress);
    try {
      const task: ThreadTask = { step: options.step ?? 'run', taskId, name, version, inputJson, attempt: options.attempt, partsJson: options.partsJson };
      const result = await this.pool.run(task, { signal: options.signal });
      if (!result.ok) throw new CodedJobError(result.code, result.message);
      return result.value;
    } catch (error) {
      throw this.explain(error, options.signal);
    } finally {
      this.progressListeners.delete(taskId);
    }
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
    this.progress.close();
  }

  private explain(error: unknown, signal: AbortSignal): unknown {
    if (error instanceof CodedJobError) return error;
    if (signal.aborted) return signal.reason;
    const { code, message } = error as { code?: string; message?: string };
    if (code === 'ERR_WORKER_OUT_OF_MEMORY') {
      return new CodedJobError(JobFailureCode.JOB_OUT_OF_MEMORY, 'the job exceeded WORKER_MAX_MEMORY_MB; its thread was replaced');
    }
    return new CodedJobError(JobFailureCode.JOB_CRASHED, `the job's thread died (${message ?? String(error)}); it was replaced`);
  }
}
