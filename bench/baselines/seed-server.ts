import { randomUUID } from 'node:crypto';
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import IORedis from 'ioredis';
import { z } from 'zod';
import { benchJobs } from '../support/bench-jobs';

const job = benchJobs.pbkdf2;
export type Pbkdf2Input = z.output<typeof job.input>;

/** How one of the seed articles' techniques computes a bench-pbkdf2 job: the hex key, when it is done. */
export type Compute = (input: Pbkdf2Input) => Promise<string>;

/**
 * The HTTP shell every seed technique shares, on bare node:http, with the template's routes so the
 * bench drives all of them alike: POST /v1/jobs/bench-pbkdf2 (validated by the type's own schema,
 * answered when the job is done), GET /v1/jobs/{id} (the finished job, kept in Redis like the
 * template's: the I/O endpoint), /health/live and /health/ready. Only `compute` differs per technique.
 * Env: REDIS_URL, REDIS_PREFIX, PORT, HOST.
 */
export function serveSeed(compute: Compute): Server {
  const redis = new IORedis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: 1 });
  const prefix = process.env.REDIS_PREFIX ?? 'seed';
  const server = createServer((req, res) => {
    route(req, res, redis, prefix, compute).catch((error: unknown) => send(res, 500, { message: String(error) }));
  });
  server.keepAliveTimeout = 72_000;
  server.listen(Number(process.env.PORT ?? 0), process.env.HOST ?? '127.0.0.1');
  const stop = () => server.close(() => void redis.quit().finally(() => process.exit(0)));
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  return server;
}

async function route(req: IncomingMessage, res: ServerResponse, redis: IORedis, prefix: string, compute: Compute): Promise<void> {
  const url = req.url ?? '/';
  if (req.method === 'GET' && url === '/health/live') return send(res, 200, { status: 'ok' });
  if (req.method === 'GET' && url === '/health/ready') {
    const ok = redis.status === 'ready';
    return send(res, ok ? 200 : 503, { status: ok ? 'ok' : 'unavailable' });
  }
  if (req.method === 'GET' && url.startsWith('/v1/jobs/')) {
    const raw = await redis.get(`${prefix}:job:${decodeURIComponent(url.slice(9))}`);
    if (raw === null) return send(res, 404, { message: 'no such job' });
    return sendRaw(res, 200, raw);
  }
  if (req.method === 'POST' && url === `/v1/jobs/${job.name}`) {
    const parsed = job.input.safeParse(await readJson(req));
    if (!parsed.success) return send(res, 400, { message: parsed.error.issues.slice(0, 20) });
    const startedAt = new Date().toISOString();
    const hash = await compute(parsed.data);
    const view = { id: randomUUID(), type: job.name, status: 'completed', result: { hash }, attempts: 1, createdAt: startedAt, startedAt, finishedAt: new Date().toISOString() };
    const text = JSON.stringify(view);
    await redis.set(`${prefix}:job:${view.id}`, text, 'EX', 3600);
    return sendRaw(res, 200, text);
  }
  send(res, 404, { message: 'not found' });
}

function send(res: ServerResponse, status: number, body: unknown): void {
  sendRaw(res, status, JSON.stringify(body));
}

function sendRaw(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) }).end(text);
}

function readJson(req: IncomingMessage): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString()));
      } catch {
        resolve(undefined); // why: the schema then answers 400, as for any other bad input
      }
    });
    req.on('error', reject);
  });
}
