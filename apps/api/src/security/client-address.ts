import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { BlockList, isIP } from 'node:net';
import { type Cidr, canonicalAddress, ipv6Groups } from '@app/config';

/** The proxies of TRUSTED_PROXIES: the only peers whose X-Forwarded-For is read, at most `hops` entries of it. */
export class TrustedProxies {
  private readonly blocks = new BlockList();
  private readonly any: boolean;

  constructor(
    ranges: readonly Cidr[],
    /** TRUSTED_PROXY_HOPS: how many proxies append to the header, so how many of its entries are read. */
    readonly hops = 1,
  ) {
    for (const { address, prefix, family } of ranges) this.blocks.addSubnet(address, prefix, family);
    this.any = ranges.length > 0;
  }

  /** Whether `address` (as canonicalAddress spells it) is one of the proxies. */
  trusts(address: string): boolean {
    const family = isIP(address);
    return this.any && family !== 0 && this.blocks.check(address, family === 6 ? 'ipv6' : 'ipv4');
  }
}

/** One X-Forwarded-For entry as an address: brackets and a port dropped, IPv4-mapped IPv6 as IPv4. */
function hopAddress(entry: string): string | undefined {
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(entry);
  const v4WithPort = /^(\d+\.\d+\.\d+\.\d+):\d+$/.exec(entry);
  return canonicalAddress(bracketed?.[1] ?? v4WithPort?.[1] ?? entry);
}

/**
 * Who sent a request, from its direct peer and its X-Forwarded-For. The header is read only when the
 * peer is a trusted proxy; then it is walked from the right, each trusted proxy there having appended
 * the address it was sent from, and the first address that is not a trusted proxy is the client.
 * Entries to its left were written by the client itself and say nothing. An entry that is not an
 * address ends the walk at the nearest trusted hop; a chain of trusted proxies only, at its leftmost.
 * why at most `hops` entries: an address in a trusted range is not always a proxy that appends to
 * the header (behind kube-proxy's SNAT the ingress appends a node's address, in the same 10/8 as
 * the pods), and walking past it would read what the client wrote.
 */
export function clientAddressOf(peer: string | undefined, forwardedFor: string | string[] | undefined, proxies: TrustedProxies): string {
  let client = (peer ? canonicalAddress(peer) : undefined) ?? 'unknown';
  if (!proxies.trusts(client)) return client;
  const chain = (Array.isArray(forwardedFor) ? forwardedFor.join(',') : (forwardedFor ?? '')).split(',').map((s) => s.trim()).filter(Boolean);
  for (let i = chain.length - 1; i >= Math.max(0, chain.length - proxies.hops); i--) {
    const hop = hopAddress(chain[i]);
    if (hop === undefined) return client;
    client = hop;
    if (!proxies.trusts(hop)) return hop;
  }
  return client;
}

export function clientAddress(req: IncomingMessage, proxies: TrustedProxies): string {
  return clientAddressOf(req.socket.remoteAddress, req.headers['x-forwarded-for'], proxies);
}

/**
 * What a per-address budget (rate limit, failed authentications) counts against: an IPv4 address, or
 * an IPv6 address's /64. why /64: it is the smallest network an IPv6 host is given (SLAAC), so one
 * client can take a fresh address from it for every request.
 */
export function addressBucket(address: string): string {
  const groups = ipv6Groups(address);
  if (!groups) return address;
  return `${groups.slice(0, 4).map((g) => g.toString(16)).join(':')}::/64`;
}

/** addressBucket, hashed: how Redis keys name a client address (never in clear). */
export const hashedAddress = (address: string): string => createHash('sha256').update(addressBucket(address)).digest('base64url').slice(0, 22);
