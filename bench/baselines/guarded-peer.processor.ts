import { Inject, Injectable } from '@nestjs/common';
import { CACHE_MANAGER } from '@nestjs/cache-manager';
import type { Job } from 'bullmq';
import type { Cache } from 'cache-manager';
import { baselineJobs, iso } from './baseline-jobs';
import { PeerProcessor } from './peer.processor';
import { CachedResult, resultKey } from './peer-result-cache';

/**
 * The equal-guarantee peer's consumer: the bare peer's processor (its @Processor options are
 * inherited) that also caches each result under its input's key before the job completes, so a
 * submission of the same input after it is a cache hit.
 */
@Injectable()
export class GuardedPeerProcessor extends PeerProcessor {
  constructor(@Inject(CACHE_MANAGER) private readonly cache: Cache) {
    super();
  }

  override async process(job: Job): Promise<unknown> {
    const result = await super.process(job);
    const cached: CachedResult = { id: job.id!, result, createdAt: iso(job.timestamp)! };
    await this.cache.set(resultKey(baselineJobs.get(job.name)!, job.data), cached);
    return result;
  }
}
