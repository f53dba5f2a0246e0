import { createServer, IncomingMessage, ServerResponse } from 'node:http';
import { createItem, getItem } from './items';

/**
 * The same small API on bare `node:http`, for context: the ceiling any framework is measured against.
 * Also serves /health/live, the trivial route the cache scenario compares with.
 */
function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) }).end(text);
}

function readJson(req: IncomingMessage): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      try {
        resolve(JSON.parse(Buffer.concat(chunks).toString()));
      } catch (error) {
        reject(error);
      }
    });
    req.on('error', reject);
  });
}

const server = createServer((req, res) => {
  const url = req.url ?? '/';
  if (req.method === 'GET' && url.startsWith('/health/')) return send(res, 200, { status: 'ok' });
  if (req.method === 'GET' && url.startsWith('/items/')) return send(res, 200, getItem(decodeURIComponent(url.slice(7))));
  if (req.method === 'POST' && url === '/items') {
    readJson(req).then(
      (body) => {
        const created = createItem(body);
        if (created.ok) send(res, 201, created.item);
        else send(res, 400, { message: created.issues });
      },
      () => send(res, 400, { message: 'invalid JSON' }),
    );
    return;
  }
  send(res, 404, { message: 'not found' });
});

server.keepAliveTimeout = 72_000;
server.listen(Number(process.env.PORT ?? 3300), process.env.HOST ?? '127.0.0.1');
const stop = () => server.close(() => process.exit(0));
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
