import { AppProcess, startApp, stackEnv } from '../support/apps';
import { request } from '../support/http';
import { SlowClient } from '../support/raw-http';

const POST_HEAD = 'POST /v1/jobs/fibonacci HTTP/1.1\r\nHost: api\r\nContent-Type: application/json\r\n';

/**
 * Slow clients: connections that send their request a byte at a time, or stop half-way. They must not
 * stop the API serving everyone else, and the API must not hold them open forever.
 */
describe('slow clients', () => {
  let api: AppProcess;

  beforeAll(async () => {
    // A short REQUEST_TIMEOUT_MS (default 30 s) so the cut-off is observable quickly.
    api = await startApp('api', stackEnv('input-slow', { REQUEST_TIMEOUT_MS: '3000' }));
  });
  afterAll(() => api.stop());

  it('keeps serving other clients promptly while 150 slow connections are open', async () => {
    const slow = [
      ...Array.from({ length: 50 }, () => new SlowClient(api.port, 'POST /v1/jobs/fibonacci HTTP/1.1\r\n', 'X-Slow: 1\r\n', 200)),
      ...Array.from({ length: 50 }, () => new SlowClient(api.port, `${POST_HEAD}Content-Length: 100000\r\n\r\n`, ' ', 200)),
      ...Array.from({ length: 50 }, () => new SlowClient(api.port, `${POST_HEAD}Content-Length: 10\r\n\r\n`)),
    ];
    try {
      const timings: number[] = [];
      for (let i = 0; i < 20; i++) {
        const t0 = Date.now();
        const [types, submitted, ready] = await Promise.all([
          request(`${api.url}/v1/job-types`),
          // A body parsed and validated (400: no job is left behind in the queue).
          request(`${api.url}/v1/jobs/fibonacci`, { method: 'POST', json: { n: 51 + i } }),
          request(`${api.url}/health/ready`),
        ]);
        timings.push(Date.now() - t0);
        expect([types.status, submitted.status, ready.status]).toEqual([200, 400, 200]);
      }
      console.log(`[slow-clients] 150 slow connections open; 20 rounds of 3 normal requests, slowest round ${Math.max(...timings)} ms`);
      expect(Math.max(...timings)).toBeLessThan(2000);
    } finally {
      for (const s of slow) s.destroy();
      await new Promise((resolve) => setTimeout(resolve, 500)); // let the server see them go
    }
  });

  /*
   * A client that hangs up in the middle of its body happens all the time on real networks and costs
   * nothing to provoke: it is the client's doing, so it must not reach the error log (and its alerts).
   */
  it('does not log a client that hangs up mid-body as an internal error', async () => {
    const before = api.logs.length;
    const client = new SlowClient(api.port, `${POST_HEAD}Content-Length: 100\r\n\r\n{"n":`);
    await new Promise((resolve) => setTimeout(resolve, 300));
    client.destroy();
    await new Promise((resolve) => setTimeout(resolve, 500));
    const errors = api.logs.slice(before).filter((l) => l.level >= 50);
    console.log(`[slow-clients] client hung up mid-body: ${errors.length} error-level log line(s)${errors.length ? `: ${errors[0].msg.split('\n')[0]}` : ''}`);
    expect(errors).toEqual([]);
    expect((await request(`${api.url}/health/ready`)).status).toBe(200);
  });

  /*
   * A client that sends its request a byte at a time (or stops) would otherwise hold its connection,
   * socket and parser forever (Fastify turns Node's own request timeout off). REQUEST_TIMEOUT_MS
   * covers receiving the request, not the response, so SSE streams and Prefer: wait are unaffected.
   */
  it('cuts off a client that never finishes sending its request (REQUEST_TIMEOUT_MS)', async () => {
    const clients = {
      'trickles its headers': new SlowClient(api.port, 'POST /v1/jobs/fibonacci HTTP/1.1\r\n', 'X-Slow: 1\r\n', 200),
      'trickles its body': new SlowClient(api.port, `${POST_HEAD}Content-Length: 100000\r\n\r\n`, ' ', 200),
      'sends headers, then nothing': new SlowClient(api.port, `${POST_HEAD}Content-Length: 10\r\n\r\n`),
    };
    try {
      const replies = await Promise.all(Object.values(clients).map((c) => c.within(3000 + 5000)));
      const outcome = Object.fromEntries(Object.keys(clients).map((k, i) => [k, replies[i].closedAfterMs ?? 'still open after 8000 ms']));
      console.log(`[slow-clients] with REQUEST_TIMEOUT_MS=3000: ${JSON.stringify(outcome)}`);
      for (const reply of replies) expect(reply.closedAfterMs).toBeDefined();
      // The API is still well after cutting them off.
      expect((await request(`${api.url}/health/ready`)).status).toBe(200);
    } finally {
      for (const c of Object.values(clients)) c.destroy();
    }
  });
});
