import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';

/**
 * Addresses a webhook must not reach through a name: loopback, private, link-local (cloud metadata
 * at 169.254.169.254), carrier-grade NAT, multicast, reserved, documentation and translation ranges
 * (RFC 6890 and the IANA special-purpose registries). IPv4-mapped (`::ffff:0:0/96`) and
 * IPv4-compatible (`::/96`, deprecated) IPv6 addresses are refused whole: a name has no business
 * resolving to an IPv4 address dressed as IPv6, and BlockList alone matches only the mapped form of
 * the IPv4 rules, never the compatible one (`::a00:1` would reach 10.0.0.1 on stacks that route it).
 */
const SPECIAL_PURPOSE = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.88.99.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15],
  ['198.51.100.0', 24], ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) SPECIAL_PURPOSE.addSubnet(network, prefix, 'ipv4');
for (const [network, prefix] of [
  ['::', 128], ['::1', 128], ['64:ff9b::', 96], ['64:ff9b:1::', 48], ['100::', 64], ['2001::', 23], ['2001:db8::', 32],
  ['2002::', 16], ['fc00::', 7], ['fe80::', 10], ['fec0::', 10], ['ff00::', 8],
] as const) SPECIAL_PURPOSE.addSubnet(network, prefix, 'ipv6');

/**
 * IPv4-compatible (`::/96`) and IPv4-mapped (`::ffff:0:0/96`) IPv6, checked for IPv6 addresses only.
 * why a list of its own: BlockList checks an IPv4 address against IPv6 rules as its mapped form, so
 * `::ffff:0:0/96` among the rules above would refuse every IPv4 address.
 */
const IPV4_AS_IPV6 = new BlockList();
IPV4_AS_IPV6.addSubnet('::', 96, 'ipv6');
IPV4_AS_IPV6.addSubnet('::ffff:0:0', 96, 'ipv6');

export function isSpecialPurpose(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return true;
  if (family === 6 && IPV4_AS_IPV6.check(address, 'ipv6')) return true;
  return SPECIAL_PURPOSE.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/** A name that resolved to an address webhooks must not reach; the connection is never opened. */
export class RefusedAddressError extends Error {
  readonly code = 'WEBHOOK_ADDRESS_REFUSED';
}

/**
 * A `lookup` for http(s).request that resolves the allowed name once and hands that very address to
 * the connection (the request keeps the name for Host and TLS SNI and verifies the certificate
 * against it). why here: a check that resolves and a connect that resolves again can see two
 * different answers (DNS rebinding); checking inside the connection's own lookup leaves no gap.
 * Any special-purpose address among the answers refuses them all, unless `allowPrivate`.
 */
export function guardedLookup(allowPrivate: boolean): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { family: options.family, hints: options.hints, all: true }, (error, addresses: LookupAddress[]) => {
      if (error) return callback(error, '', 0);
      const refused = allowPrivate ? [] : addresses.filter((a) => isSpecialPurpose(a.address));
      if (refused.length > 0 || addresses.length === 0) {
        const got = addresses.map((a) => a.address).join(', ') || 'nothing';
        return callback(new RefusedAddressError(`${hostname} resolved to ${got}: not a public address (WEBHOOK_ALLOW_PRIVATE_ADDRESSES is off)`), '', 0);
      }
      if (options.all) callback(null, addresses);
      else callback(null, addresses[0].address, addresses[0].family);
    });
  };
}
