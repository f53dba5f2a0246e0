import { randomUUID } from 'node:crypto';
import Fastify from 'fastify';
import { FileBlobStore } from '../../libs/blobs/src/file-blob-store';

/**
 * The files scenario's ceiling for uploads: a bare Fastify route that streams a request's body
 * (application/octet-stream, not parsed, not hashed, not sniffed) into the same kind of store as the
 * template's (FileBlobStore, the same directory), under a key of its own, and answers its size.
 * Env: BLOB_DIR (the store's directory), PORT, HOST.
 */
async function main(): Promise<void> {
  const dir = process.env.BLOB_DIR;
  if (!dir) throw new Error('BLOB_DIR is required');
  const store = new FileBlobStore(dir);
  const app = Fastify({ bodyLimit: 1024 ** 3, requestTimeout: 0 });
  // why a parser that hands on the stream: the route reads the body itself, as it arrives.
  app.addContentTypeParser('application/octet-stream', (_req, payload, done) => done(null, payload));
  app.get('/health/live', () => ({ status: 'ok' }));
  app.get('/health/ready', () => ({ status: 'ok' }));
  app.post('/upload', async (req, reply) => {
    const info = await store.write(`bare/${randomUUID()}`, req.body as NodeJS.ReadableStream as never);
    return reply.status(201).send({ bytes: info.bytes });
  });
  for (const signal of ['SIGTERM', 'SIGINT']) process.once(signal, () => void app.close().finally(() => process.exit(0)));
  await app.listen({ port: Number(process.env.PORT ?? 3300), host: process.env.HOST ?? '127.0.0.1' });
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
