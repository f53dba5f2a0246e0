import IORedis from 'ioredis';
import { failUnansweredAfter } from '../libs/redis/src/reply-deadline';
import { RedisServer } from './support/redis';
import { waitFor } from './support/wait';

const DEADLINE_MS = 400;

/** What a command came to: its reply, or its error's message, and how long after sending. */
async function outcome(command: Promise<unknown>): Promise<{ value: string; ms: number }> {
  const started = Date.now();
  const value = await command.then(
    (reply) => `reply ${String(reply)}`,
    (error: Error) => error.message,
  );
  return { value, ms: Date.now() - started };
}

/**
 * libs/redis/src/reply-deadline.ts against a redis-server of the test's own, frozen with SIGSTOP:
 * a request connection's commands fail instead of hanging, and only when Redis answers nothing.
 */
describe('failUnansweredAfter (a request connection on a frozen Redis)', () => {
  let server: RedisServer;
  let client: IORedis;

  beforeAll(async () => {
    server = await RedisServer.start();
    client = new IORedis(server.url, { enableOfflineQueue: false, maxRetriesPerRequest: 1 });
    failUnansweredAfter(client, DEADLINE_MS);
    await waitFor(() => client.status === 'ready', { what: 'the client connected' });
  });

  afterAll(async () => {
    server.signalProcess('SIGCONT');
    client.disconnect();
    await server.stop();
  });

  it('fails every command awaiting a reply once the oldest has none for the deadline, and the connection serves again after', async () => {
    server.signalProcess('SIGSTOP');
    let outcomes: Array<{ value: string; ms: number }>;
    try {
      const first = outcome(client.set('deadline:a', '1'));
      await new Promise((resolve) => setTimeout(resolve, DEADLINE_MS / 2));
      outcomes = await Promise.all([first, outcome(client.get('deadline:a'))]);
    } finally {
      server.signalProcess('SIGCONT');
    }
    expect(outcomes.map((o) => o.value)).toEqual(['Command timed out', 'Command timed out']);
    // Not before its deadline; within a few looks after it (a loaded host's timers run late).
    expect(outcomes[0].ms).toBeGreaterThanOrEqual(DEADLINE_MS);
    expect(outcomes[0].ms).toBeLessThan(DEADLINE_MS * 10);
    // The late replies settle nothing; the connection answers in order again.
    expect(await client.get('deadline:a')).toBe('1');
  });

  it('fails nothing while Redis answers, however long the traffic lasts', async () => {
    const until = Date.now() + DEADLINE_MS * 3;
    let sent = 0;
    const errors: string[] = [];
    while (Date.now() < until) {
      // Several in flight at once, so the queue is never empty for long.
      const replies = await Promise.allSettled(Array.from({ length: 8 }, (_, i) => client.incr(`deadline:n${i}`)));
      sent += replies.length;
      for (const reply of replies) if (reply.status === 'rejected') errors.push(String(reply.reason));
    }
    expect({ errors, some: sent > 0 }).toEqual({ errors: [], some: true });
  });

  it('keeps its deadline across a reconnect (ioredis makes a new queue at each connect)', async () => {
    const reconnected = new Promise((resolve) => client.once('ready', resolve));
    client.disconnect(true);
    await reconnected;
    server.signalProcess('SIGSTOP');
    let frozen: { value: string; ms: number };
    try {
      frozen = await outcome(client.get('deadline:a'));
    } finally {
      server.signalProcess('SIGCONT');
    }
    expect(frozen.value).toBe('Command timed out');
    expect(await client.get('deadline:a')).toBe('1');
  });
});
