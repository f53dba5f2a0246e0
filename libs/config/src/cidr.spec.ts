import { canonicalAddress, ipv6Groups, parseCidr } from './cidr';

describe('address ranges', () => {
  it('expands IPv6 addresses to their eight groups', () => {
    expect(ipv6Groups('::')).toEqual([0, 0, 0, 0, 0, 0, 0, 0]);
    expect(ipv6Groups('2001:db8::1')).toEqual([0x2001, 0xdb8, 0, 0, 0, 0, 0, 1]);
    expect(ipv6Groups('1:2:3:4:5:6:7:8')).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(ipv6Groups('::ffff:10.1.2.3')).toEqual([0, 0, 0, 0, 0, 0xffff, 0x0a01, 0x0203]);
    expect(ipv6Groups('10.1.2.3')).toBeUndefined();
  });

  it('reads IPv4-mapped IPv6 addresses, however spelled, as IPv4', () => {
    expect(canonicalAddress('::ffff:10.1.2.3')).toBe('10.1.2.3');
    expect(canonicalAddress('::FFFF:a01:203')).toBe('10.1.2.3');
    expect(canonicalAddress('0:0:0:0:0:ffff:0a01:0203')).toBe('10.1.2.3');
    expect(canonicalAddress('2001:DB8::1')).toBe('2001:db8::1');
    expect(canonicalAddress('10.1.2.3')).toBe('10.1.2.3');
    expect(canonicalAddress('not-an-address')).toBeUndefined();
  });

  it('parses CIDRs and single addresses of both families', () => {
    expect(parseCidr('10.0.0.0/8')).toEqual({ address: '10.0.0.0', prefix: 8, family: 'ipv4' });
    expect(parseCidr(' 192.0.2.7 ')).toEqual({ address: '192.0.2.7', prefix: 32, family: 'ipv4' });
    expect(parseCidr('fd00::/8')).toEqual({ address: 'fd00::', prefix: 8, family: 'ipv6' });
    expect(parseCidr('2001:db8::5')).toEqual({ address: '2001:db8::5', prefix: 128, family: 'ipv6' });
    expect(parseCidr('::ffff:10.0.0.0/104')).toEqual({ address: '10.0.0.0', prefix: 8, family: 'ipv4' });
  });

  it.each(['10.0.0.0/33', 'fd00::/129', '10.0.0/8', 'proxy.internal', '10.0.0.0/8/1', '10.0.0.0/-1', '::ffff:10.0.0.0/64', ''])('refuses %j', (entry) =>
    expect(parseCidr(entry)).toBeUndefined(),
  );
});
