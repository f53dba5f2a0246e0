import { type DynamicModule, Global, Module } from '@nestjs/common';
import { BLOB_STORE, type BlobStore } from '@app/blobs';
import { JobsModule } from '../jobs/jobs.module';
import { FileDownloadsController } from './file-downloads.controller';
import { FileIntake } from './file-intake';

/**
 * Files in and out of jobs: the blob store start-up opened (BLOB_STORE), the multipart intake of
 * submissions, and the downloads of the files jobs returned. Core, not a capability: a type that
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
      providers: [{ provide: BLOB_STORE, useValue: blobs }, FileIntake],
      exports: [BLOB_STORE, FileIntake],
    };
  }
}
