import { join } from 'node:path';
import { Inject, Injectable, type OnApplicationShutdown } from '@nestjs/common';
import { CACHE_MANAGER } from '@nestjs/cache-manager';
import type { Job } from 'bullmq';
import type { Cache } from 'cache-manager';
import Piscina from 'piscina';
import { baselineJobs, iso } from './baseline-jobs';
import { PeerProcessor } from './peer.processor';
import { peerEnv } from './peer.queue';
import { CachedResult, resultKey } from './peer-result-cache';

/**
 * The equal-guarantee peer's consumer: the bare peer's processor (its @Processor options are
 * inherited) that runs each job where the template would, and caches each result under its input's
 * key before the job completes, so a submission of the same input after it is a cache hit.
 * Where: a type declared `inline` on the worker's event loop, as the bare peer runs every job; any
 * other on a piscina pool of as many threads as the processor's concurrency, piscina's defaults
 * otherwise, the way a user keeps the worker's loop free of the work (its lock renewals and
 * health): the guarantee the template's pool threads give.
 */
@Injectable()
export class GuardedPeerProcessor extends PeerProcessor implements OnApplicationShutdown {
  private readonly pool = new Piscina<{ name: string; data: unknown }, unknown>({
    filename: join(__dirname, 'guarded-peer.thread.js'),
    minThreads: peerEnv().concurrency,
    maxThreads: peerEnv().concurrency,
  });

  constructor(@Inject(CACHE_MANAGER) private readonly cache: Cache) {
    super();
  }

  override async process(job: Job): Promise<unknown> {
    const def = baselineJobs.get(job.name);
    const result = def && !def.inline ? await this.pool.run({ name: job.name, data: job.data }) : await super.process(job);
    const cached: CachedResult = { id: job.id!, result, createdAt: iso(job.timestamp)! };
    await this.cache.set(resultKey(baselineJobs.get(job.name)!, job.data), cached);
    return result;
  }

  async onApplicationShutdown(): Promise<void> {
    await this.pool.destroy();
  }
}
