import { Global, Inject, Module, type OnApplicationShutdown } from '@nestjs/common';
import { CONFIG, type Config } from '@app/config';
import type { BlobStore } from './blob-store';
import { openBlobStore } from './open-blob-store';

/** Injection token of the process's BlobStore; null in production without BLOB_STORE_URL (no file types then). */
export const BLOB_STORE = Symbol('BLOB_STORE');

/** The blob store, one per process, closed at shutdown. The apps check it before Nest starts (checkConfiguredBlobStore). */
@Global()
@Module({
  providers: [{ provide: BLOB_STORE, inject: [CONFIG], useFactory: (config: Config) => (config.blobStore ? openBlobStore(config.blobStore) : null) }],
  exports: [BLOB_STORE],
})
export class BlobsModule implements OnApplicationShutdown {
  constructor(@Inject(BLOB_STORE) private readonly store: BlobStore | null) {}

  onApplicationShutdown(): void {
    this.store?.close();
  }
}
