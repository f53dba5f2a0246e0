import { EventSource } from 'eventsource';
import { AppProcess, startApp, startStack, stackEnv } from './support/apps';
import { submit } from './support/http';
import { sleep, waitFor } from './support/wait';

interface Received {
  type: string;
  id: string;
  data: any;
  /** Which of the client's connections delivered it (0 = the first). */
  connection: number;
}

interface Connection {
  url: string;
  lastEventId?: string;
  status?: number;
}

/**
 * A WHATWG-conformant EventSource (the `eventsource` package behaves like a browser: it reconnects
 * whenever a stream ends, sending Last-Event-ID) on job `id`'s events. `route(n)` is the API its
 * n-th connection goes to, like a load balancer would choose; every connection is recorded.
 */
function listen(id: string, route: (connection: number) => AppProcess) {
  const connections: Connection[] = [];
  const received: Received[] = [];
  const source = new EventSource(`http://api.invalid/v1/jobs/${id}/events`, {
    fetch: async (url, init) => {
      const connection: Connection = { url: route(connections.length).url, lastEventId: init.headers['Last-Event-ID'] };
      connections.push(connection);
      const res = await fetch(`${connection.url}${new URL(url).pathname}`, init as RequestInit);
      connection.status = res.status;
      return res;
    },
  });
  for (const type of ['progress', 'completed', 'failed', 'cancelled']) {
    source.addEventListener(type, (event) => received.push({ type, id: event.lastEventId, data: JSON.parse(event.data), connection: connections.length - 1 }));
  }
  return { source, connections, received, finals: () => received.filter((e) => e.type !== 'progress') };
}

/** Job event streams as standard clients consume them: EventSource in a browser, or its npm twin. */
describe('event streams with a standard EventSource client', () => {
  let api: AppProcess;
  let worker: AppProcess;
  let stop: () => Promise<void>;
  const env = stackEnv('event-stream');
  const sources: EventSource[] = [];

  beforeAll(async () => {
    ({ api, worker, stop } = await startStack(env));
  });
  afterAll(async () => {
    for (const source of sources) source.close();
    await stop();
  });

  it('gets one stream per job and exactly one final event; its reconnect is answered 204 and it stops', async () => {
    const { body } = await submit(api.url, 'chaos', { mode: 'sleep', ms: 1500, tag: 'one-stream' });
    const client = listen(body.id, () => api);
    sources.push(client.source);
    // The client does not close itself after the final event, like a page that just stays open.
    await waitFor(() => client.source.readyState === EventSource.CLOSED, { timeoutMs: 20_000, what: 'EventSource to stop' });
    expect(client.finals()).toEqual([expect.objectContaining({ type: 'completed', id: 'final', data: expect.objectContaining({ id: body.id, status: 'completed' }) })]);
    expect(client.connections.map(({ lastEventId, status }) => ({ lastEventId, status }))).toEqual([
      { lastEventId: undefined, status: 200 },
      { lastEventId: 'final', status: 204 },
    ]);
    const progress = client.received.filter((e) => e.type === 'progress');
    expect(progress.length).toBeGreaterThanOrEqual(3);
    expect(progress.every((e) => e.id === String(e.data.progress))).toBe(true);
    // Nothing more, however long the page stays open (the server's retry hint is 1 s).
    await sleep(3000);
    expect(client.connections).toHaveLength(2);
    expect(client.finals()).toHaveLength(1);
  });

  it('resumes on another replica after its replica goes away mid-job, without repeating what it saw', async () => {
    const leaving = await startApp('api', env);
    try {
      const { body } = await submit(api.url, 'chaos', { mode: 'sleep', ms: 5000, tag: 'resume' });
      const client = listen(body.id, (n) => (n === 0 ? leaving : api));
      sources.push(client.source);
      await waitFor(() => client.received.filter((e) => e.type === 'progress').length >= 3, { timeoutMs: 15_000, what: 'progress on the first replica' });
      expect(await leaving.stop('SIGTERM')).toBe(0); // drains: ends the stream without a final event
      await waitFor(() => client.source.readyState === EventSource.CLOSED, { timeoutMs: 20_000, what: 'EventSource to stop' });

      const [first, second, last] = client.connections;
      expect(first).toMatchObject({ url: leaving.url, status: 200 });
      const seenOnFirst = client.received.filter((e) => e.connection === 0);
      expect(seenOnFirst.every((e) => e.type === 'progress')).toBe(true);
      expect(second).toEqual({ url: api.url, lastEventId: seenOnFirst.at(-1)!.id, status: 200 });
      expect(last).toEqual({ url: api.url, lastEventId: 'final', status: 204 });
      expect(client.connections).toHaveLength(3);

      const progress = client.received.filter((e) => e.type === 'progress').map((e) => e.data.progress as number);
      expect(progress.length).toBeGreaterThan(seenOnFirst.length); // it went on from the second replica
      for (let i = 1; i < progress.length; i++) expect(progress[i]).toBeGreaterThan(progress[i - 1]); // no repeats
      expect(client.finals()).toEqual([expect.objectContaining({ type: 'completed', connection: 1, data: expect.objectContaining({ status: 'completed' }) })]);
    } finally {
      await leaving.stop('SIGKILL');
    }
  });

  it('answers 204 to a reconnect past the final event of a failed job too', async () => {
    const failed = await submit(api.url, 'chaos', { mode: 'throw', tag: 'stream-failed' }, { wait: 10 });
    expect(failed.body.status).toBe('failed');
    const client = listen(failed.body.id, () => api);
    sources.push(client.source);
    await waitFor(() => client.source.readyState === EventSource.CLOSED, { timeoutMs: 10_000, what: 'EventSource to stop' });
    expect(client.finals().map((e) => e.type)).toEqual(['failed']);
    expect(client.connections.map((c) => c.status)).toEqual([200, 204]);
    expect(worker.alive).toBe(true);
  });
});
