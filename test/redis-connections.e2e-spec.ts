import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import IORedis from 'ioredis';
import { METRICS } from '@app/metrics';
import { bullKey, WEBHOOK_QUEUE } from '@app/queue';
import { type AppProcess, startAll, startApp, stackEnv } from './support/apps';
import { ifPresent, present } from './support/capabilities';
import { submit } from './support/http';
import { scrape, series } from './support/prometheus';
import { waitFor } from './support/wait';

/** How long the receiver holds each webhook before it answers 204. */
const HOLD_MS = 1500;

/** A webhook receiver that answers each request HOLD_MS late; `received` counts the requests. */
async function slowReceiver(): Promise<{ server: Server; port: number; received: () => number }> {
  let count = 0;
  const server = createServer((req, res) => {
    req.resume().on('end', () => {
      count++;
      setTimeout(() => res.writeHead(204).end(), HOLD_MS);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as { port: number }).port, received: () => count };
}

/**
 * The API's Redis connections, opened, reported and closed in one place (RedisConnections): every
 * one is in `nest_offload_redis_connected`, and at SIGTERM they close only once the work on them is
 * done (a webhook delivery in flight is recorded as delivered, not left active for another replica).
 */
describe('Redis connections of the API', () => {
  const secret = `whsec_${randomBytes(32).toString('base64')}`;
  const apps: AppProcess[] = [];
  let receiver: Awaited<ReturnType<typeof slowReceiver>>;
  let env: ReturnType<typeof stackEnv>;

  beforeAll(async () => {
    receiver = await slowReceiver();
    env = stackEnv('redis-connections', { WEBHOOK_SECRET: secret, WEBHOOK_ALLOWED_HOSTS: `127.0.0.1:${receiver.port}` });
  });
  afterAll(async () => {
    await Promise.all(apps.map((app) => app.stop('SIGKILL')));
    receiver.server.closeAllConnections();
    await new Promise((resolve) => receiver.server.close(resolve));
  });

  it('reports every connection it opens, the submissions and webhooks ones included', async () => {
    // why no replica: the submit connection exists with REDIS_MIN_REPLICAS_ACK whether or not one acknowledges.
    const api = await startApp('api', { ...env, REDIS_MIN_REPLICAS_ACK: '1' });
    apps.push(api);
    const up = Object.fromEntries(series(await scrape(api.url), METRICS.redisConnected).map((s) => [s.labels.connection, s.value]));
    expect(up).toEqual({ queue: 1, cache: 1, events: 1, submit: 1, deadlines: 1, listing: 1, ...(present('webhooks') && { webhooks: 1 }) });
    expect(await api.stop()).toBe(0);
  });

  ifPresent('webhooks').it('closes the connections at SIGTERM only after the webhook delivery in flight is done and recorded', async () => {
    const [api, worker] = await startAll([startApp('api', env), startApp('worker', env)]);
    apps.push(api, worker);
    const { body } = await submit(api.url, 'chaos', { mode: 'ok' }, { headers: { 'callback-url': `http://127.0.0.1:${receiver.port}/hook` } });
    expect(body.id).toBeDefined();
    await waitFor(() => receiver.received() === 1, { what: 'the webhook to reach the receiver' });
    api.signal('SIGTERM');
    expect(await api.exited).toBe(0);
    expect(receiver.received()).toBe(1);
    const redis = new IORedis(env.REDIS_URL!);
    try {
      const key = (structure: string) => bullKey(env.REDIS_PREFIX!, WEBHOOK_QUEUE, structure);
      expect({ active: await redis.llen(key('active')), completed: await redis.zcard(key('completed')) }).toEqual({ active: 0, completed: 1 });
    } finally {
      redis.disconnect();
    }
  });
});
