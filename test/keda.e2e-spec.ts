import { Queue } from 'bullmq';
import IORedis from 'ioredis';
import { JobRegistry } from '@app/jobs';
import { queuePrefix } from '@app/queue';
import { Overlay, ScaledObject } from './deploy/overlay';
import { AppProcess, startApp, uniquePrefix } from './support/apps';

/**
 * The KEDA triggers of docker/kubernetes read what the code produces: each is evaluated as KEDA
 * does (its redis scaler's script, its metrics-api prometheus matching) against a real API and
 * Redis holding jobs the API queued. No worker runs, so every job stays where BullMQ put it.
 */

// The API below runs with CHAOS_JOBS; the manifests have a worker for every deployed queue.
const registry = JobRegistry.forConfig({ chaosJobs: true });
const QUEUES = registry.workerQueues();
const dev = new Overlay('dev');

describe('KEDA triggers evaluated as KEDA does, against the real API and Redis', () => {
  // KEDA's redis scaler (pkg/scalers/redis_scaler.go): the cardinality of whatever the key holds.
  const KEDA_REDIS_SCRIPT = `
    local t = redis.call('type', KEYS[1]).ok
    if t == 'zset' then return redis.call('zcard', KEYS[1])
    elseif t == 'set' then return redis.call('scard', KEYS[1])
    elseif t == 'hash' then return redis.call('hlen', KEYS[1])
    elseif t == 'list' or t == 'none' then return redis.call('llen', KEYS[1])
    else return redis.error_reply('ERR unsupported key type: ' .. t) end`;
  const prefix = uniquePrefix('keda');
  const redisUrl = process.env.E2E_REDIS_URL!;
  let api: AppProcess | undefined;
  const connections: IORedis[] = [];
  const queues: Queue[] = [];

  afterAll(async () => {
    await Promise.all(queues.map((q) => q.obliterate({ force: true }).then(() => q.close())));
    await api?.stop();
    for (const connection of connections) connection.disconnect();
  });

  it('each trigger reads the jobs the code queued: waiting, prioritized and delayed, and the backlog as their sum', async () => {
    api = await startApp('api', { REDIS_URL: redisUrl, REDIS_PREFIX: prefix, CHAOS_JOBS: 'true' });
    const redis = new IORedis(redisUrl);
    connections.push(redis);
    for (const queue of QUEUES) {
      // why maxRetriesPerRequest null: BullMQ's requirement for a connection it is handed.
      const connection = new IORedis(redisUrl, { maxRetriesPerRequest: null });
      connections.push(connection);
      queues.push(new Queue(queue, { connection, prefix: queuePrefix(prefix, queue) }));
    }
    const post = async (type: string, input: unknown) => {
      const res = await fetch(`${api!.url}/v1/jobs/${type}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(input) });
      expect(res.status).toBe(202);
    };
    // No worker runs: every job stays where BullMQ put it. `chaos` has a priority; each other queue
    // gets the first example of its first type (none for a deployed queue no type uses), and every
    // queue a delayed job.
    for (let n = 20; n < 23; n++) await post('fibonacci', { n });
    for (let i = 0; i < 2; i++) await post('chaos', { mode: 'ok', ms: i });
    const expected: Record<string, Record<string, number>> = { default: { waiting: 3, prioritized: 2, delayed: 1, backlog: 5 } };
    for (const queue of QUEUES.filter((q) => q !== 'default')) {
      const def = registry.list().find((d) => d.queue === queue);
      if (def) await post(def.name, def.examples[0]);
      const queued = def ? 1 : 0;
      expected[queue] = def?.priority === undefined ? { waiting: queued, prioritized: 0, delayed: 1, backlog: queued } : { waiting: 0, prioritized: 1, delayed: 1, backlog: 1 };
    }
    for (const queue of queues) await queue.add(registry.list().find((d) => d.queue === queue.name)?.name ?? 'none', {}, { delay: 3_600_000 });

    const metrics = await (await fetch(`${api.url}/metrics`)).text();
    const configPrefix = dev.config(dev.api).redisPrefix;
    const seen: Record<string, Record<string, number>> = {};
    for (const scaled of dev.ofKind<ScaledObject>('ScaledObject')) {
      for (const t of scaled.spec.triggers) {
        let queue: string;
        let value: number;
        if (t.type === 'metrics-api') {
          expect(new URL(t.metadata.url).pathname).toBe('/metrics');
          queue = /queue="([^"]+)"/.exec(t.metadata.valueLocation)![1];
          value = prometheusValue(metrics, t.metadata.valueLocation);
        } else {
          // The manifest's key, under this test's prefix instead of the configured one.
          expect(t.metadata.listName.startsWith(`${configPrefix}:`)).toBe(true);
          const key = `${prefix}:${t.metadata.listName.slice(configPrefix.length + 1)}`;
          queue = /\{([^}]+)\}/.exec(key)![1];
          value = Number(await redis.eval(KEDA_REDIS_SCRIPT, 1, key));
        }
        (seen[queue] ??= {})[t.name!] = value;
      }
    }
    console.log(`[keda] trigger values with no worker running: ${JSON.stringify(seen)}`);
    expect(Object.keys(seen).sort()).toEqual(QUEUES);
    for (const [queue, values] of Object.entries(seen)) {
      expect(values).toEqual(Object.fromEntries(Object.keys(values).map((k) => [k, expected[queue][k]])));
    }
  });
});

/** KEDA's metrics-api `format: prometheus`: the first series of the name whose labels equal the selector's. */
function prometheusValue(text: string, selector: string): number {
  const [, name, labelText = ''] = /^([\w:]+)(?:\{(.*)\})?$/.exec(selector)!;
  const wanted = [...labelText.matchAll(/(\w+)="([^"]*)"/g)].map(([, k, v]) => `${k}="${v}"`);
  for (const line of text.split('\n')) {
    const [, series, labels = '', value] = /^([\w:]+)(?:\{(.*)\})? (\S+)$/.exec(line) ?? [];
    if (series === name && wanted.every((w) => labels.split(',').includes(w))) return Number(value);
  }
  throw new Error(`value ${selector} not found`);
}

