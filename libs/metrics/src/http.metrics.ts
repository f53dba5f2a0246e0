import type { FastifyInstance } from 'fastify';
import type { Registry } from 'prom-client';
import { type BoundObserver, BoundHistogram } from './bound-metrics';
import { METRICS } from './metric-names';

/** The route label of requests no route matched (404s): never the raw URL, which is unbounded. */
export const UNMATCHED_ROUTE = 'unmatched';

/**
 * `nest_offload_http_request_duration_seconds{route,method,status}`: every answered request, timed
 * by Fastify from its arrival to the end of the response. Streams (SSE) and `Prefer: wait` count
 * their whole duration.
 */
export function registerHttpMetrics(fastify: FastifyInstance, registry: Registry): void {
  const histogram = new BoundHistogram({
    name: METRICS.httpRequestDuration,
    help: 'HTTP requests by route template, method and status, from arrival to the end of the response',
    labelNames: ['route', 'method', 'status'],
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  });
  // Each series is bound once: routes x methods x statuses is a small space. why nested lookups,
  // not one string key: building the key costs more than the rest of the hook.
  const series = new Map<string, Map<string, BoundObserver[]>>();
  fastify.addHook('onResponse', (request, reply, done) => {
    const route = request.routeOptions.url ?? UNMATCHED_ROUTE;
    let methods = series.get(route);
    if (!methods) series.set(route, (methods = new Map()));
    let statuses = methods.get(request.method);
    if (!statuses) methods.set(request.method, (statuses = []));
    const status = reply.statusCode;
    const observer = (statuses[status] ??= histogram.bind({ route, method: request.method, status: String(status) }));
    observer.observe(reply.elapsedTime / 1000);
    done();
  });
}
