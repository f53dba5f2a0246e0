import type { FastifyRequest } from 'fastify';

/** True when the browser says the request comes from another site (Fetch Metadata; absent outside browsers). */
export function crossSite(request: FastifyRequest): boolean {
  const site = request.headers['sec-fetch-site'];
  return site !== undefined && site !== 'same-origin' && site !== 'none';
}
