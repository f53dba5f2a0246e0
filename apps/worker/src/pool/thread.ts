import { BroadcastChannel, threadId } from 'node:worker_threads';
import { workerData } from 'piscina';
import { type BlobStore, openBlobStore } from '@app/blobs';
import { runTask } from './thread-task';
import type { ChannelMessage, ThreadData, ThreadResult, ThreadTask } from './thread-protocol';
import { enterSchedIdle } from './thread-sched';

/**
 * The piscina thread entry: runs one job's pure `run` function (thread-task.ts), off every event loop.
 * No Nest, no Redis and no OpenTelemetry here; the thread knows only the job registry.
 */
const { progressChannel, logLevel, sched, blobStore } = workerData as ThreadData;
if (sched === 'idle') {
  try {
    enterSchedIdle();
  } catch (error) {
    // why a warning, not a failure: the main thread's probe passed, so this is unexpected; the job still runs, at WORKER_NICE.
    process.emitWarning(`pool thread ${threadId} stays on SCHED_OTHER: ${error instanceof Error ? error.message : String(error)}`);
  }
}
const channel = new BroadcastChannel(progressChannel);
channel.unref();
const post = (message: ChannelMessage) => channel.postMessage(message);
// why opened on first use: most jobs write no file, and an S3 store loads the AWS SDK.
let store: BlobStore | undefined;
const storeOf = () => (store ??= blobStore && openBlobStore(blobStore));

export default function runThreadTask(task: ThreadTask): Promise<ThreadResult> {
  return runTask(task, post, threadId, logLevel, storeOf);
}
