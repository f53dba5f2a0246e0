import { isIP } from 'node:net';

/** An address range: `address/prefix` of `family` (BlockList.addSubnet's arguments). */
export interface Cidr {
  readonly address: string;
  readonly prefix: number;
  readonly family: 'ipv4' | 'ipv6';
}

/**
 * The eight 16-bit groups of an IPv6 address (`::` expanded, a trailing dotted IPv4 part read as the
 * last two groups), or undefined when it is not one.
 */
export function ipv6Groups(address: string): number[] | undefined {
  if (isIP(address) !== 6) return undefined;
  let text = address.toLowerCase().replace(/%.*$/, '');
  const v4 = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (v4) {
    const [a, b, c, d] = v4.slice(1).map(Number);
    text = `${text.slice(0, v4.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.includes('::') ? text.split('::') : [text, undefined];
  const parse = (part: string | undefined) => (part ? part.split(':').map((group) => parseInt(group, 16)) : []);
  const left = parse(head);
  const right = parse(tail);
  return tail === undefined ? left : [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
}

/**
 * The IPv4 address an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`, however spelled) stands for,
 * other addresses as they are (IPv6 ones in lowercase). Undefined when `address` is not an IP address.
 */
export function canonicalAddress(address: string): string | undefined {
  const family = isIP(address);
  if (family === 4) return address;
  if (family !== 6) return undefined;
  const groups = ipv6Groups(address)!;
  if (groups.slice(0, 5).every((g) => g === 0) && groups[5] === 0xffff) {
    return [groups[6] >> 8, groups[6] & 0xff, groups[7] >> 8, groups[7] & 0xff].join('.');
  }
  return address.toLowerCase();
}

/**
 * One `address/prefix` (or a bare address: that one address). An IPv4-mapped IPv6 range of at least
 * /96 is read as the IPv4 range it maps, since clients arriving that way are treated as IPv4.
 */
export function parseCidr(entry: string): Cidr | undefined {
  const match = /^([^/\s]+)(?:\/(\d{1,3}))?$/.exec(entry.trim());
  if (!match) return undefined;
  const family = isIP(match[1]);
  if (family === 0) return undefined;
  const max = family === 4 ? 32 : 128;
  const prefix = match[2] === undefined ? max : Number(match[2]);
  if (prefix > max) return undefined;
  const canonical = canonicalAddress(match[1])!;
  if (family === 6 && isIP(canonical) === 4) {
    return prefix >= 96 ? { address: canonical, prefix: prefix - 96, family: 'ipv4' } : undefined;
  }
  return { address: canonical, prefix, family: family === 4 ? 'ipv4' : 'ipv6' };
}
