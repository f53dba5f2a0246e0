import { type DynamicModule, Global, Module } from '@nestjs/common';
import { BLOB_STORE, type BlobStore } from '@app/blobs';
import { FileIntake } from './file-intake';

/**
 * Files in and out of jobs: the blob store start-up opened (BLOB_STORE), and the multipart intake
 * of submissions. Core, not a capability: a type that takes files needs it to be submitted at all.
 */
@Global()
@Module({})
export class FilesModule {
  static forRoot(blobs: BlobStore | null): DynamicModule {
    return { module: FilesModule, providers: [{ provide: BLOB_STORE, useValue: blobs }, FileIntake], exports: [BLOB_STORE, FileIntake] };
  }
}
