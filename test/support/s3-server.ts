import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import S3rver from 's3rver';

/** The credentials s3rver accepts; the SDK reads them as any AWS_* credentials. */
export const S3_CREDENTIALS = { AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER', AWS_REGION: 'us-east-1' } as const;

/**
 * An S3-compatible HTTP server of the test's own (s3rver, from npm), in this process, on a free port
 * and a fresh directory, with one bucket: what the S3 blob store talks to in tests, nothing mocked.
 * `stop()` then `start()` again takes it down and brings it back on the same port with its objects.
 */
export class S3Server {
  private server?: S3rver;
  private readonly dir = mkdtempSync(join(tmpdir(), 'nest-offload-s3-'));
  port = 0;

  private constructor(readonly bucket: string) {}

  static async start(bucket = 'nest-offload-test'): Promise<S3Server> {
    const s3 = new S3Server(bucket);
    try {
      await s3.startServer();
    } catch (error) {
      rmSync(s3.dir, { recursive: true, force: true });
      throw error;
    }
    return s3;
  }

  get endpoint(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** BLOB_STORE_URL for this server's bucket, under `prefix`. */
  url(prefix = ''): string {
    return `s3://${this.bucket}/${prefix}?endpoint=${encodeURIComponent(this.endpoint)}&region=us-east-1&forcePathStyle=true`;
  }

  /** What an app needs in its environment to use this server: BLOB_STORE_URL and the credentials. */
  env(prefix = ''): Record<string, string> {
    return { BLOB_STORE_URL: this.url(prefix), ...S3_CREDENTIALS };
  }

  async startServer(): Promise<void> {
    this.server = new S3rver({ port: this.port, address: '127.0.0.1', directory: this.dir, silent: true, configureBuckets: [{ name: this.bucket, configs: [] }] });
    const { port } = (await this.server.run()) as { port: number };
    this.port = port;
  }

  /** Takes the server down (connections refused) until startServer(); its objects stay. */
  async stopServer(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    await server?.close();
  }

  async stop(): Promise<void> {
    await this.stopServer();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
