export { BlobStoreError, checkKey, isBlobStoreError } from './blob-store';
export type { BlobInfo, BlobRead, BlobStore, PresignOptions, WriteOptions } from './blob-store';
export { BLOB_STORE, BlobsModule } from './blobs.module';
export { FileBlobStore } from './file-blob-store';
export { checkBlobStore, checkConfiguredBlobStore, openBlobStore, STORE_WAIT_MS } from './open-blob-store';
export { blobKeyOf, hashesOf, SHA256_HEX, stagingKeyOf } from './file-refs';
export type { FileRef } from './file-refs';
