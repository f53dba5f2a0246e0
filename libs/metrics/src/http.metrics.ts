import type { FastifyInstance } from 'fastify';
import { Histogram, Registry } from 'prom-client';
import { METRICS } from './metric-names';

/** The route label of requests no route matched (404s): never the raw URL, which is unbounded. */
export const UNMATCHED_ROUTE = 'unmatched';

type Observer = { observe(value: number): void };

/**
 * `nest_offload_http_request_duration_seconds{route,method,status}`: every answered request, timed
 * by Fastify from its arrival to the end of the response. Streams (SSE) and `Prefer: wait` count
 * their whole duration.
 */
export function registerHttpMetrics(fastify: FastifyInstance, registry: Registry): void {
  const histogram = new Histogram({
    name: METRICS.httpRequestDuration,
    help: 'HTTP requests by route template, method and status, from arrival to the end of the response',
    labelNames: ['route', 'method', 'status'],
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  });
  // why a cache of children: looking a series up by its label object hashes the labels on every
  // request; the key space is small (routes x methods x statuses), so each series is resolved once.
  const series = new Map<string, Observer>();
  fastify.addHook('onResponse', (request, reply, done) => {
    const route = request.routeOptions.url ?? UNMATCHED_ROUTE;
    const key = `${request.method} ${reply.statusCode} ${route}`;
    let observer = series.get(key);
    if (!observer) series.set(key, (observer = histogram.labels(route, request.method, String(reply.statusCode))));
    observer.observe(reply.elapsedTime / 1000);
    done();
  });
}
