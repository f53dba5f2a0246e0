import type { FastifyInstance } from 'fastify';

/** Helmet's defaults, trimmed to what a JSON API needs. The /demo page (dev only) sets its own policy. */
const HEADERS: Record<string, string> = {
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  'strict-transport-security': 'max-age=31536000; includeSubDomains',
  'x-dns-prefetch-control': 'off',
  'x-permitted-cross-domain-policies': 'none',
};
const API_CSP = "default-src 'none'; frame-ancestors 'none'";

export function registerSecurityHeaders(fastify: FastifyInstance): void {
  fastify.addHook('onSend', (request, reply, payload, done) => {
    void reply.headers(HEADERS);
    if (!reply.hasHeader('content-security-policy')) void reply.header('content-security-policy', API_CSP);
    if (request.url.startsWith('/v1/') && !reply.hasHeader('cache-control')) void reply.header('cache-control', 'no-store');
    done(null, payload);
  });
}
