import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/**
 * Where files live (BLOB_STORE_URL): a directory, or a bucket of an S3-compatible store. Neither
 * holds credentials: S3's come from the standard AWS_* variables or the pod's role.
 */
export type BlobTarget =
  | { readonly kind: 'file'; readonly dir: string }
  | {
      readonly kind: 's3';
      readonly bucket: string;
      /** Prepended to every key: empty, or ending in `/`. */
      readonly prefix: string;
      /** An S3-compatible server (MinIO, R2, GCS interop); AWS S3 itself when undefined. */
      readonly endpoint?: string;
      /** AWS_REGION (or the SDK's other sources) when undefined. */
      readonly region?: string;
      /** `bucket` in the path, not the host name: what most S3-compatible servers need. */
      readonly forcePathStyle: boolean;
    };

const S3_OPTIONS = new Set(['endpoint', 'region', 'forcePathStyle']);
const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;
const PREFIX = /^([\w.!*'()-]+\/)*$/;

/** BLOB_STORE_URL parsed, or the problem with it (the caller names the variable). */
export function blobTargetOf(value: string): BlobTarget | { problem: string } {
  if (!URL.canParse(value)) return { problem: 'must be a file:///dir or s3://bucket/prefix URL' };
  const url = new URL(value);
  if (url.username || url.password) return { problem: 'must not hold credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or use the pod’s role)' };
  if (url.protocol === 'file:') {
    if (url.search || url.hash || (url.host !== '' && url.host !== 'localhost')) return { problem: 'a file:// URL names a local directory only (file:///var/lib/blobs)' };
    const dir = fileURLToPath(url).replace(/\/+$/, '');
    return dir === '' ? { problem: 'a file:// URL must name a directory, not /' } : { kind: 'file', dir };
  }
  if (url.protocol !== 's3:') return { problem: 'must be a file:///dir or s3://bucket/prefix URL' };
  const unknown = [...url.searchParams.keys()].filter((k) => !S3_OPTIONS.has(k));
  if (unknown.length > 0) return { problem: `unknown option(s) ${unknown.join(', ')}; s3:// takes endpoint, region and forcePathStyle` };
  const bucket = url.hostname;
  if (!BUCKET.test(bucket)) return { problem: `"${bucket}" is not a bucket name (3-63 lowercase letters, digits, dots and dashes)` };
  const path = decodeURIComponent(url.pathname.replace(/^\/+/, ''));
  const prefix = path === '' || path.endsWith('/') ? path : `${path}/`;
  if (!PREFIX.test(prefix)) return { problem: `"${path}" is not a key prefix (letters, digits and .!*'()_- between slashes)` };
  const endpoint = url.searchParams.get('endpoint') ?? undefined;
  if (endpoint !== undefined && !(URL.canParse(endpoint) && /^https?:$/.test(new URL(endpoint).protocol))) {
    return { problem: 'endpoint must be an http:// or https:// URL (e.g. endpoint=http://minio:9000)' };
  }
  const forcePathStyle = url.searchParams.get('forcePathStyle') ?? 'false';
  if (forcePathStyle !== 'true' && forcePathStyle !== 'false') return { problem: 'forcePathStyle must be true or false' };
  const region = url.searchParams.get('region') ?? undefined;
  return { kind: 's3', bucket, prefix, ...(endpoint && { endpoint }), ...(region && { region }), forcePathStyle: forcePathStyle === 'true' };
}

/**
 * The store outside production when BLOB_STORE_URL is unset: a directory under the system's temp
 * dir, one per REDIS_PREFIX, so an API and a worker on one machine (`npm start`) share it.
 */
export function defaultBlobTarget(redisPrefix: string): BlobTarget {
  return { kind: 'file', dir: join(tmpdir(), 'nest-offload-blobs', redisPrefix) };
}

/** The store as a message may name it: the URL without anything but where it is. */
export function describeBlobTarget(target: BlobTarget): string {
  if (target.kind === 'file') return pathToFileURL(target.dir).href;
  return `s3://${target.bucket}/${target.prefix}${target.endpoint ? ` at ${target.endpoint}` : ''}`;
}
