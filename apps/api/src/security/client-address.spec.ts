import { loadConfig } from '@app/config';
import { addressBucket, clientAddressOf, hashedAddress, TrustedProxies } from './client-address';

const rangesOf = (ranges: string[]) => (ranges.length ? loadConfig({ TRUSTED_PROXIES: ranges.join(',') }).trustedProxies : []);
const proxies = (...ranges: string[]) => new TrustedProxies(rangesOf(ranges));
/** Proxies trusted through up to `hops` X-Forwarded-For entries. */
const chained = (hops: number, ...ranges: string[]) => new TrustedProxies(rangesOf(ranges), hops);

describe('client address', () => {
  const trusted = chained(16, '10.0.0.0/8', 'fd00::/8');

  it('ignores X-Forwarded-For from a peer that is not a trusted proxy', () => {
    expect(clientAddressOf('203.0.113.9', '10.0.0.1', trusted)).toBe('203.0.113.9');
    expect(clientAddressOf('203.0.113.9', '198.51.100.1', trusted)).toBe('203.0.113.9');
    expect(clientAddressOf('203.0.113.9', '198.51.100.1', proxies())).toBe('203.0.113.9');
    expect(clientAddressOf('10.0.0.2', '198.51.100.1', proxies())).toBe('10.0.0.2');
  });

  it('walks the chain of a trusted proxy from the right, skipping trusted proxies: the first other address is the client', () => {
    expect(clientAddressOf('10.0.0.2', '198.51.100.1', trusted)).toBe('198.51.100.1');
    expect(clientAddressOf('10.0.0.2', '198.51.100.1, 10.1.1.1', trusted)).toBe('198.51.100.1');
    // What the client wrote itself (left of the address the first proxy saw) says nothing.
    expect(clientAddressOf('10.0.0.2', '10.9.9.9, 1.2.3.4, 198.51.100.1, 10.1.1.1', trusted)).toBe('198.51.100.1');
    expect(clientAddressOf('10.0.0.2', ['1.2.3.4', '198.51.100.1'], trusted)).toBe('198.51.100.1');
    expect(clientAddressOf('fd00::1', '2001:db8::7', trusted)).toBe('2001:db8::7');
  });

  it('reads at most TRUSTED_PROXY_HOPS entries: an address in a trusted range that appended nothing hides what the client wrote', () => {
    // Behind kube-proxy's SNAT the ingress (10.42.0.9) appends the node's address (10.20.0.5); one hop
    // (the default) stops there, whatever the client put to its left.
    const ingress = chained(1, '10.0.0.0/8');
    expect(clientAddressOf('10.42.0.9', '203.0.113.7, 10.20.0.5', ingress)).toBe('10.20.0.5');
    expect(clientAddressOf('10.42.0.9', '203.0.113.7, 198.51.100.1', ingress)).toBe('198.51.100.1');
    expect(new TrustedProxies(rangesOf(['10.0.0.0/8'])).hops).toBe(1);
    // A load balancer that appends too, in front of the ingress: two hops.
    const twoHops = chained(2, '10.0.0.0/8', '130.211.0.0/22');
    expect(clientAddressOf('10.42.0.9', '203.0.113.7, 198.51.100.1, 130.211.0.4', twoHops)).toBe('198.51.100.1');
    expect(clientAddressOf('10.42.0.9', '203.0.113.7, 10.20.0.4, 10.20.0.5', twoHops)).toBe('10.20.0.4');
  });

  it('stops at the nearest trusted hop on garbage, and takes the leftmost of an all-trusted chain', () => {
    expect(clientAddressOf('10.0.0.2', 'nonsense', trusted)).toBe('10.0.0.2');
    expect(clientAddressOf('10.0.0.2', '1.2.3.4, nonsense, 10.1.1.1', trusted)).toBe('10.1.1.1');
    expect(clientAddressOf('10.0.0.2', '10.1.1.1, 10.2.2.2', trusted)).toBe('10.1.1.1');
    expect(clientAddressOf('10.0.0.2', undefined, trusted)).toBe('10.0.0.2');
    expect(clientAddressOf(undefined, '1.2.3.4', trusted)).toBe('unknown');
  });

  it('reads entries with ports and brackets, and IPv4-mapped peers and entries as IPv4', () => {
    expect(clientAddressOf('10.0.0.2', '198.51.100.1:4711', trusted)).toBe('198.51.100.1');
    expect(clientAddressOf('10.0.0.2', '[2001:db8::7]:4711', trusted)).toBe('2001:db8::7');
    expect(clientAddressOf('::ffff:10.0.0.2', '198.51.100.1', trusted)).toBe('198.51.100.1');
    expect(clientAddressOf('::ffff:203.0.113.9', '198.51.100.1', trusted)).toBe('203.0.113.9');
    expect(clientAddressOf('10.0.0.2', '::ffff:198.51.100.1', trusted)).toBe('198.51.100.1');
    expect(clientAddressOf('10.0.0.2', '::ffff:10.3.3.3, 10.1.1.1', trusted)).toBe('10.3.3.3');
  });

  it('counts an IPv6 client by its /64, an IPv4 client by its address', () => {
    expect(addressBucket('2001:db8:1:2:aaaa::1')).toBe('2001:db8:1:2::/64');
    expect(addressBucket('2001:db8:1:2:bbbb:cccc:dddd:eeee')).toBe('2001:db8:1:2::/64');
    expect(addressBucket('2001:db8:1:3::1')).toBe('2001:db8:1:3::/64');
    expect(addressBucket('198.51.100.1')).toBe('198.51.100.1');
    expect(hashedAddress('2001:db8:1:2::1')).toBe(hashedAddress('2001:db8:1:2:ffff::9'));
    expect(hashedAddress('2001:db8:1:2::1')).not.toBe(hashedAddress('2001:db8:1:3::1'));
    expect(hashedAddress('198.51.100.1')).not.toContain('198');
  });
});
