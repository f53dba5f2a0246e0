import { type DynamicModule, Global, Module } from '@nestjs/common';
import { BLOB_STORE, type BlobStore } from '@app/blobs';
import { CONFIG, type Config } from '@app/config';
import { BlobLeases } from '@app/queue';
import type { RedisClient } from '@app/redis';
import { QUEUE_REDIS } from '../queues/queue.providers';
import { JobsModule } from '../jobs/jobs.module';
import { FileDownloadsController } from './file-downloads.controller';
import { BlobSweeper } from './blob-sweeper';
import { FileIntake } from './file-intake';
import { Sha256Thread } from './sha256-thread';

/**
 * Files in and out of jobs: the blob store start-up opened (BLOB_STORE), the multipart intake of
 * submissions, the downloads of the files jobs returned, and the leases and sweeps that remove
 * what no job, cache entry or upload needs any more. Core, not a capability: a type that
 * takes or returns files needs it to be used at all.
 */
@Global()
@Module({})
export class FilesModule {
  static forRoot(blobs: BlobStore | null): DynamicModule {
    return {
      module: FilesModule,
      imports: [JobsModule],
      controllers: [FileDownloadsController],
      providers: [
        { provide: BLOB_STORE, useValue: blobs },
        { provide: BlobLeases, inject: [QUEUE_REDIS, CONFIG], useFactory: (redis: RedisClient, config: Config) => new BlobLeases(redis, config.redisPrefix) },
        FileIntake,
        BlobSweeper,
        Sha256Thread,
      ],
      exports: [BLOB_STORE, BlobLeases, FileIntake, Sha256Thread],
    };
  }
}
