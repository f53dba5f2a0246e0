import type { IncomingMessage } from 'node:http';

/**
 * The client's IP address. Behind `hops` trusted proxies, each appends the address it received from
 * to X-Forwarded-For, so the client is the entry `hops` from the end; entries further left were
 * written by the client itself and are not trusted.
 */
export function clientAddress(req: IncomingMessage, hops: number): string {
  const direct = req.socket.remoteAddress ?? 'unknown';
  if (hops === 0) return direct;
  const header = req.headers['x-forwarded-for'];
  const chain = (Array.isArray(header) ? header.join(',') : (header ?? '')).split(',').map((s) => s.trim()).filter(Boolean);
  return chain[chain.length - hops] ?? chain[0] ?? direct;
}
