import { type AddressInfo, isIPv6 } from 'node:net';

/**
 * The address a server listens on, as the start-up line shows it: `HOST` as it is (`0.0.0.0` by
 * default, every interface), not the loopback address Nest's getUrl() puts in its place.
 */
export function listeningOn(address: AddressInfo | string | null): string {
  if (address === null || typeof address === 'string') return String(address);
  return `http://${isIPv6(address.address) ? `[${address.address}]` : address.address}:${address.port}`;
}
