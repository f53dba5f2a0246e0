import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { FeedMessage, FeedOptions } from './thumbnail-feeders.thread';

/**
 * Callers keeping thumbnails running through the API, on a thread of their own. why not on the
 * bench's event loop: that loop also drives the GETs whose rate the isolation leg measures
 * (autocannon), and each thumbnail's 5 MB upload held it up: the GET clients then left the API
 * waiting for requests (0.66–0.73 of a core in a run that fed a second API instead, against
 * 0.95–0.99 idle), which read as the API's isolation.
 */
export class ThumbnailFeeders {
  /** Thumbnails fed so far. */
  fed = 0;
  private readonly worker: Worker;
  private readonly ended: Promise<void>;

  constructor(options: FeedOptions) {
    this.worker = new Worker(join(__dirname, 'thumbnail-feeders.thread.js'), { workerData: options });
    this.ended = new Promise((resolve, reject) => {
      this.worker.on('message', (message: FeedMessage) => {
        if ('fed' in message) this.fed += message.fed;
        else if ('done' in message) resolve();
        else reject(new Error(`thumbnail feeders: ${message.error}`));
      });
      this.worker.on('error', reject);
      this.worker.on('exit', (code) => reject(new Error(`thumbnail feeders exited (code ${code}) before they were stopped`)));
    });
    // why: a failure before stop() is awaited must not be an unhandled rejection; stop() reports it.
    this.ended.catch(() => undefined);
  }

  /** Stops every caller once its thumbnail under way is done; rejects with what failed meanwhile. */
  async stop(): Promise<void> {
    this.worker.postMessage('stop');
    try {
      await this.ended;
    } finally {
      await this.worker.terminate();
    }
  }
}
