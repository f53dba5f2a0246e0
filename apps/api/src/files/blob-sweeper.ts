import { Inject, Injectable, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { BLOB_STORE, type BlobStore } from '@app/blobs';
import { CONFIG, type Config } from '@app/config';
import { type Logger, LOGGER } from '@app/logging';
import { BlobLeases, type SweepReport, sweepBlobs } from '@app/queue';
import { Periodic } from '../periodic';

/** How often a replica deletes the objects whose lease passed (every replica does; a script hands each object to one). */
const SWEEP_EVERY_MS = 60_000;
/** How often a sweep also lists the whole store (a request per 1000 objects on S3): for objects no lease covers and abandoned writes. */
const LIST_EVERY = 60;
/** why an hour past the longest run: a run writes its files from its thread, and its worker leases them only once the run is over. */
const orphanGraceMs = (config: Config) => config.jobTimeoutMs + 3600_000;

/**
 * Keeps the blob store to what jobs, cache entries and uploads still need (see blob-leases.ts in
 * libs/queue): deletes each object once its lease has passed, and, every LIST_EVERY sweeps, gives a
 * lease to objects that have none and deletes staged and unfinished writes older than the upload
 * expiry (UPLOAD_TTL_SECONDS): what an API or worker killed mid-write left.
 */
@Injectable()
export class BlobSweeper implements OnModuleInit, OnApplicationShutdown {
  private sweeps = 0;
  private readonly periodic: Periodic;

  constructor(
    @Inject(BLOB_STORE) private readonly store: BlobStore | null,
    private readonly leases: BlobLeases,
    @Inject(CONFIG) private readonly config: Config,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    this.periodic = new Periodic(
      SWEEP_EVERY_MS,
      (signal) => {
        // why counted when a sweep starts (Periodic skips a tick while one runs): a skipped tick would skip the listing's turn.
        // why the first listing only after LIST_EVERY sweeps: replicas started together do not all list at once.
        const list = ++this.sweeps % LIST_EVERY === 0;
        return this.sweep({ list, signal });
      },
      (error) => this.logger.warn({ err: error }, 'blob store sweep failed; the next one retries'),
    );
  }

  onModuleInit(): void {
    if (this.store) this.periodic.start();
  }

  onApplicationShutdown(): Promise<void> {
    // why stopped, not awaited to its end: a listing of a large S3 store takes minutes, past the
    // shutdown deadline; what the sweep took and did not delete is due again for another replica.
    return this.periodic.stop();
  }

  sweep(options: { list: boolean; now?: number; signal?: AbortSignal }): Promise<SweepReport> {
    return sweepBlobs(this.store!, this.leases, { ...options, stagedMaxAgeMs: this.config.uploadTtlSeconds * 1000, orphanGraceMs: orphanGraceMs(this.config) });
  }
}
