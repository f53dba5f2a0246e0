// No Nest here: pool threads load this lib to read and write files (the apps provide BLOB_STORE).
export { BLOB_STORE, BlobStoreError, checkKey, isBlobStoreError } from './blob-store';
export type { BlobInfo, BlobRead, BlobStore, PresignOptions, WriteOptions } from './blob-store';
export { FileBlobStore } from './file-blob-store';
export { blobStoreProblem, openBlobStore, openConfiguredBlobStore, STORE_WAIT_MS } from './open-blob-store';
export { promote, writeByContent } from './content-writes';
export { blobKeyOf, hashesOf, isStoredResult, LARGE_RESULT_BYTES, RESULT_FILE_NAME, RESULT_JSON, SHA256_HEX, stagingKeyOf } from './file-refs';
export type { FileRef, ResultFile, StoredResult } from './file-refs';
export { contentDisposition } from './content-disposition';
