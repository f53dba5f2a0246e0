import { rmSync } from 'node:fs';
import { Redis } from 'ioredis';
import { coalesceWrites, LuaScript, replicaMark, waitForReplicas } from '@app/redis';
import { RedisServer } from './support/redis';
import { newNode, type RedisNode } from './support/redis-ha';
import { sleep, waitFor } from './support/wait';

/** Counts the writes `redis`'s socket makes from now on (each one system call; a cork's gathered chunks are one). */
function writesOf(redis: Redis): () => number {
  const socket = redis.stream as unknown as Record<'_write' | '_writev', (...args: unknown[]) => void>;
  let writes = 0;
  for (const name of ['_write', '_writev'] as const) {
    const write = socket[name].bind(socket);
    socket[name] = (...args) => {
      writes++;
      write(...args);
    };
  }
  return () => writes;
}

/** The two ways the hot paths save Redis work per job, on a server of the test's own (counts are its own). */
describe('sending to Redis', () => {
  let server: RedisServer;
  let redis: Redis;
  let admin: Redis;
  beforeAll(async () => {
    server = await RedisServer.start();
    redis = new Redis(server.url);
    admin = new Redis(server.url);
    await Promise.all([redis.ping(), admin.ping()]);
  });
  afterAll(async () => {
    await Promise.all([redis?.quit(), admin?.quit()]);
    await server?.stop();
  });

  it('a Lua script goes by its SHA, and by its body again once Redis has forgotten it', async () => {
    const script = new LuaScript(`return redis.call('INCRBY', KEYS[1], ARGV[1])`, 1);
    await expect(script.run(redis, 'n', 2)).resolves.toBe(2);
    await expect(script.run(redis, 'n', 3)).resolves.toBe(5);
    const stats = async () => Number(/cmdstat_eval:calls=(\d+)/.exec(await admin.info('commandstats'))?.[1] ?? 0);
    expect(await stats()).toBe(1);
    await admin.script('FLUSH');
    await expect(script.run(redis, 'n', 1)).resolves.toBe(6);
    await expect(script.run(redis, 'n', 1)).resolves.toBe(7);
    expect(await stats()).toBe(2);
    // A script's own error is the caller's, not a reason to resend it.
    await expect(new LuaScript(`return redis.error_reply('NOPE')`, 0).run(redis)).rejects.toThrow('NOPE');
  });

  it('commands sent in one turn of the event loop leave in one write, in order; the next turn writes again', async () => {
    const coalesced = new Redis(server.url);
    coalesceWrites(coalesced);
    try {
      await Promise.all([coalesced.ping(), redis.ping()]);
      const [writes, plainWrites] = [writesOf(coalesced), writesOf(redis)];
      // One turn: a command, one sent from a later tick and one from a microtask after that.
      const replies = new Promise((resolve) => {
        const set = coalesced.set('a', '1');
        process.nextTick(() => {
          const append = coalesced.append('a', '2');
          queueMicrotask(() => resolve(Promise.all([set, append, coalesced.get('a')])));
        });
      });
      await expect(replies).resolves.toEqual(['OK', 2, '12']);
      expect(writes()).toBe(1);
      // A later turn writes on its own.
      await expect(coalesced.append('a', '3')).resolves.toBe(3);
      expect(writes()).toBe(2);
      // A plain connection writes each command as it is sent.
      await Promise.all([redis.set('b', '1'), redis.append('b', '2'), redis.get('b')]);
      expect(plainWrites()).toBe(3);
    } finally {
      await coalesced.quit();
    }
  });
});

/**
 * A WAIT in flight when its connection drops is sent again by ioredis once it reconnects
 * (autoResendUnfulfilledCommands), to whatever primary it reaches then: after a failover, one that
 * counts its own replicas, not the writes sent before. REDIS_MIN_REPLICAS_ACK's "accepted means
 * durable" must not take that answer.
 */
describe('waiting for replicas across a reconnect', () => {
  let lone: RedisServer | undefined;
  let primary: RedisServer | undefined;
  let replica: RedisNode | undefined;
  let client: Redis | undefined;
  afterAll(async () => {
    client?.disconnect();
    await replica?.kill();
    if (replica) rmSync(replica.dir, { recursive: true, force: true });
    await Promise.all([lone?.stop(), primary?.stop()]);
  });

  it('counts no replica when the WAIT was answered on another connection than the writes went out on', async () => {
    [lone, primary] = await Promise.all([RedisServer.start(), RedisServer.start()]);
    replica = await newNode('replica', '', (port) => ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--replicaof', '127.0.0.1', String(primary!.port)]);
    await replica.start();
    const admin = new Redis(primary.url);
    await waitFor(async () => /connected_slaves:1/.test(await admin.info('replication')), { what: 'the replica linked' });
    /** WAITs the primary with a replica has answered: the resent ones reach it. */
    const waitsThere = async () => Number(/cmdstat_wait:calls=(\d+)/.exec(await admin.info('commandstats'))?.[1] ?? 0);

    const across = async (mark: boolean): Promise<number> => {
      client = new Redis(lone!.url);
      const marked = mark ? replicaMark(client, 'k') : undefined;
      await client.set('k', '1');
      // The lone server has no replica: this WAIT blocks until the connection is moved under it.
      const acked = waitForReplicas(client, 'k', 1, 5000, marked);
      await sleep(200);
      const before = await waitsThere();
      client.options.port = primary!.port;
      client.stream.destroy();
      const result = await acked;
      client.disconnect();
      // The WAIT sent to the lone server was answered by the other one.
      expect(await waitsThere()).toBe(before + 1);
      return result;
    };
    // Unguarded, that answer stands: whatever the other primary's replica says, for a write it never
    // had (1 when its replica acknowledges in time; it can be slower than the WAIT's timeout on a busy host).
    await across(false);
    // Guarded, it counts nothing.
    await expect(across(true)).resolves.toBe(0);
    await admin.quit();
  });
});
