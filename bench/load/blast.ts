import autocannon from 'autocannon';
import { LatencySummary, summarize } from '../support/stats';
import { keyHeader } from './api-key';

export interface BlastResult {
  /** Completed 2xx responses per second. */
  rps: number;
  ok: number;
  non2xx: number;
  errors: number;
  latency: LatencySummary;
}

export interface BlastOptions {
  url: string;
  method?: 'GET' | 'POST';
  body?: unknown;
  headers?: Record<string, string>;
  connections: number;
  durationS: number;
  /** Builds each request's body afresh (distinct inputs). */
  body$?: () => unknown;
}

/**
 * Drives one route with autocannon for a bounded time. Latencies are taken from each response
 * (sub-millisecond), not from autocannon's whole-millisecond histogram.
 */
export async function blast(options: BlastOptions): Promise<BlastResult> {
  const headers = { ...keyHeader(options.url), ...options.headers, ...(options.body !== undefined || options.body$ ? { 'content-type': 'application/json' } : {}) };
  const latencies: number[] = [];
  let ok = 0;
  let non2xx = 0;
  const makeBody = options.body$;
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon(
      {
        url: options.url,
        connections: options.connections,
        duration: options.durationS,
        // why: autocannon stops at its next sample tick; a short tick keeps short runs short.
        sampleInt: 100,
        timeout: 30,
        method: options.method ?? 'GET',
        headers,
        body: options.body !== undefined ? JSON.stringify(options.body) : undefined,
        requests: makeBody ? [{ setupRequest: (req) => ({ ...req, body: JSON.stringify(makeBody()) }) }] : undefined,
      },
      (error, res) => (error ? reject(error) : resolve(res)),
    );
    instance.on('response', (_client, status, _bytes, ms) => {
      if (status >= 200 && status < 300) {
        ok++;
        latencies.push(ms);
      } else non2xx++;
    });
  });
  return {
    rps: ok / Math.max(result.duration, 0.001),
    ok,
    non2xx,
    errors: result.errors + result.timeouts,
    latency: summarize(latencies),
  };
}
