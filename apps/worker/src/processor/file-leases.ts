import { Inject, Injectable } from '@nestjs/common';
import { BLOB_STORE, type BlobStore, blobKeyOf, type FileRef, isStoredResult } from '@app/blobs';
import { CONFIG, type Config } from '@app/config';
import type { JobDefinition } from '@app/jobs';
import { BlobLeases } from '@app/queue';
import type { RedisClient } from '@app/redis';
import { WORKER_REDIS } from './worker-redis';

/**
 * The leases a finished run gives the files it used (see blob-leases.ts in libs/queue): the files
 * its result holds until its job and cache entry expire, its input files until its job does. A job
 * without files costs nothing here.
 */
@Injectable()
export class FileLeases {
  private readonly leases: BlobLeases;

  constructor(
    @Inject(BLOB_STORE) private readonly store: BlobStore | null,
    @Inject(WORKER_REDIS) redis: RedisClient,
    @Inject(CONFIG) private readonly config: Config,
  ) {
    this.leases = new BlobLeases(redis, config.redisPrefix);
  }

  /** Whether a job with `inputs` and `result` has files to lease. why apart: most jobs have none, and skip an async call. */
  static uses(inputs: object | undefined, result: unknown): boolean {
    return inputs !== undefined || isStoredResult(result);
  }

  /**
   * Leases the files of `result` and `inputs`; returns the result's files that are no longer in the
   * store (a sweep removed one the run's thread had found there before its lease): the result is
   * not usable then.
   */
  async hold(def: JobDefinition, inputs: Readonly<Record<string, FileRef>> | undefined, result: unknown): Promise<string[]> {
    const store = this.store;
    const outputs = isStoredResult(result) ? result.$files.map((file) => blobKeyOf(file.sha256)) : [];
    if (!store || (outputs.length === 0 && inputs === undefined)) return [];
    const now = Date.now();
    const retention = this.config.jobRetentionSeconds * 1000;
    const [lost] = await Promise.all([
      this.leases.holdWritten(store, outputs, now + Math.max(retention, def.cacheTtlSeconds * 1000)),
      this.leases.hold(inputs ? Object.values(inputs).map((ref) => blobKeyOf(ref.sha256)) : [], now + retention),
    ]);
    return lost;
  }
}
