import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { blobTargetOf, describeBlobTarget } from './blob-target';
import { ConfigError, loadConfig } from './config';

describe('BLOB_STORE_URL', () => {
  it('reads a directory and an S3 bucket with its options', () => {
    expect(blobTargetOf('file:///var/lib/blobs/')).toEqual({ kind: 'file', dir: '/var/lib/blobs' });
    expect(blobTargetOf('s3://my-bucket/jobs/files?endpoint=http%3A%2F%2Fminio%3A9000&region=eu-west-1&forcePathStyle=true')).toEqual({
      kind: 's3',
      bucket: 'my-bucket',
      prefix: 'jobs/files/',
      endpoint: 'http://minio:9000',
      region: 'eu-west-1',
      forcePathStyle: true,
    });
    expect(blobTargetOf('s3://my-bucket')).toEqual({ kind: 's3', bucket: 'my-bucket', prefix: '', forcePathStyle: false });
    expect(describeBlobTarget(blobTargetOf('s3://b-1/p?endpoint=http://minio:9000') as never)).toBe('s3://b-1/p/ at http://minio:9000');
  });

  it.each([
    ['http://example.com/x', 'must be a file:///dir or s3://bucket/prefix URL'],
    ['s3://AK:SECRET@bucket/x', 'must not hold credentials'],
    ['s3://bucket/x?endpoint=ftp://x', 'endpoint must be an http:// or https:// URL'],
    ['s3://bucket/x?acl=public', 'unknown option(s) acl'],
    ['s3://bucket/x?forcePathStyle=yes', 'forcePathStyle must be true or false'],
    ['s3://Bad_Bucket/x', 'is not a bucket name'],
    ['s3://bucket/a b', 'is not a key prefix'],
    ['file://host/dir', 'a file:// URL names a local directory only'],
    ['file:///', 'must name a directory'],
  ])('refuses %s', (value, problem) => {
    const target = blobTargetOf(value);
    expect('problem' in target && target.problem).toContain(problem);
  });

  it('defaults to a directory under the temp dir per REDIS_PREFIX outside production, none in production', () => {
    expect(loadConfig({ REDIS_PREFIX: 'svc' }).blobStore).toEqual({ kind: 'file', dir: join(tmpdir(), 'nest-offload-blobs', 'svc') });
    expect(loadConfig({ NODE_ENV: 'production', ALLOW_UNAUTHENTICATED: 'true' }).blobStore).toBeUndefined();
  });

  it('refuses a file store in production unless BLOB_STORE_ALLOW_FILE says so, and never echoes the URL', () => {
    const env = { NODE_ENV: 'production', BLOB_STORE_URL: 'file:///mnt/blobs' };
    expect(() => loadConfig(env)).toThrow(/BLOB_STORE_URL: a file:\/\/ store when NODE_ENV=production needs BLOB_STORE_ALLOW_FILE=true/);
    expect(loadConfig({ ...env, BLOB_STORE_ALLOW_FILE: 'true' }).blobStore).toEqual({ kind: 'file', dir: '/mnt/blobs' });
    expect(loadConfig({ ...env, BLOB_STORE_URL: 's3://bucket/p' }).blobStore).toMatchObject({ kind: 's3', bucket: 'bucket' });
    const error = (() => {
      try {
        loadConfig({ BLOB_STORE_URL: 's3://AKIA:topsecret@bucket' });
      } catch (e) {
        return e as ConfigError;
      }
    })();
    expect(error?.problems).toEqual([expect.stringContaining('BLOB_STORE_URL: must not hold credentials')]);
    expect(error?.message).not.toContain('topsecret');
  });
});
