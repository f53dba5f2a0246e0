import { guardedLookup, isSpecialPurpose, RefusedAddressError } from './address-guard';

const lookup = (allowPrivate: boolean, host: string, all = false) =>
  new Promise<unknown>((resolve, reject) =>
    guardedLookup(allowPrivate)(host, { all }, (error, address) => (error ? reject(error) : resolve(address))),
  );

describe('address guard', () => {
  it.each(['127.0.0.1', '10.1.2.3', '172.16.0.1', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '224.0.0.1', '::1', '::', 'fd00::1', 'fe80::1', '::ffff:127.0.0.1', '::ffff:a9fe:a9fe', '64:ff9b::a9fe:a9fe', 'not-an-ip'])(
    'refuses %s',
    (address) => expect(isSpecialPurpose(address)).toBe(true),
  );

  it.each(['93.184.215.14', '8.8.8.8', '2606:4700:4700::1111', '2a00:1450:4001:81a::200e', '::1:0:0:1'])('allows %s', (address) => expect(isSpecialPurpose(address)).toBe(false));

  // IPv4-mapped (::ffff:0:0/96) and IPv4-compatible (::/96) forms, of private addresses in every
  // spelling, and of public ones too: an IPv4 address in IPv6 clothing is refused whole.
  it.each([
    '::ffff:10.0.0.1', '::ffff:a00:1', '0:0:0:0:0:ffff:0a00:0001', '::ffff:192.168.1.1', '::ffff:169.254.169.254', '::ffff:172.16.0.1',
    '::10.0.0.1', '::a00:1', '::127.0.0.1', '::7f00:1', '::a9fe:a9fe', '::c0a8:101', '::ffff:8.8.8.8', '::8.8.8.8',
  ])('refuses the IPv4-mapped or -compatible %s', (address) => expect(isSpecialPurpose(address)).toBe(true));

  it('refuses a name that resolves to a private address before any connection, unless told otherwise', async () => {
    await expect(lookup(false, 'localhost')).rejects.toThrow(RefusedAddressError);
    await expect(lookup(false, 'localhost')).rejects.toThrow(/localhost resolved to .*not a public address/);
    expect(await lookup(true, 'localhost')).toMatch(/^(127\.0\.0\.1|::1)$/);
    expect(await lookup(true, 'localhost', true)).toEqual(expect.arrayContaining([expect.objectContaining({ address: expect.any(String) })]));
  });
});
