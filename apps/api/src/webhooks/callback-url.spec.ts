import { CallbackUrlPolicy } from './callback-url';

describe('CallbackUrlPolicy', () => {
  const policy = new CallbackUrlPolicy({
    schemes: ['http:', 'https:'],
    allowedHosts: [{ host: 'hooks.example.com' }, { host: '127.0.0.1', port: 8080 }, { host: 'xn--bcher-kva.example' }, { host: '[::1]', port: 9000 }],
  });
  const allowed = (raw: string) => policy.check(raw);

  it('accepts an allowed host on its scheme\'s default port, and normalizes the URL', () => {
    expect(allowed('https://hooks.example.com/jobs?x=1#frag')).toEqual({ ok: true, url: 'https://hooks.example.com/jobs?x=1' });
    expect(allowed('http://HOOKS.Example.COM:80/a')).toEqual({ ok: true, url: 'http://hooks.example.com/a' });
    expect(allowed('https://hooks.example.com:443/')).toMatchObject({ ok: true });
    // IDNA: the Unicode name and its punycode are the same host.
    expect(allowed('https://BÜCHER.example/cb')).toEqual({ ok: true, url: 'https://xn--bcher-kva.example/cb' });
    expect(allowed('http://[::1]:9000/')).toMatchObject({ ok: true });
  });

  it('compares IPv4 addresses in every spelling WHATWG URL accepts', () => {
    expect(allowed('http://127.0.0.1:8080/')).toMatchObject({ ok: true });
    expect(allowed('http://2130706433:8080/')).toEqual({ ok: true, url: 'http://127.0.0.1:8080/' });
    expect(allowed('http://0x7f.1:8080/')).toMatchObject({ ok: true });
  });

  it.each([
    ['https://hooks.example.com:8443/', /hooks\.example\.com:8443 is not in WEBHOOK_ALLOWED_HOSTS/], // a port the entry does not name
    ['http://127.0.0.1/', /not in WEBHOOK_ALLOWED_HOSTS/], // the entry names port 8080 only
    ['http://127.0.0.2:8080/', /not in WEBHOOK_ALLOWED_HOSTS/],
    ['https://evil.hooks.example.com/', /not in WEBHOOK_ALLOWED_HOSTS/], // exact match, no subdomains
    ['https://hooks.example.com.evil.net/', /not in WEBHOOK_ALLOWED_HOSTS/],
    ['https://hooks.example.com./', /not in WEBHOOK_ALLOWED_HOSTS/],
    ['https://user:pw@hooks.example.com/', /user name or password/],
    ['https://hooks.example.com@evil.net/', /user name or password/],
    ['ftp://hooks.example.com/', /scheme must be http or https/],
    ['file:///etc/passwd', /scheme must be http or https/],
    ['/relative', /not an absolute URL/],
    ['http://exa mple.com/', /not an absolute URL/],
    [`https://hooks.example.com/${'a'.repeat(2048)}`, /longer than 2048/],
  ])('refuses %s', (raw, reason) => {
    const check = allowed(raw);
    expect(check.ok).toBe(false);
    expect(check.ok ? '' : check.reason).toMatch(reason);
  });

  it('accepts https only when the config says so (production)', () => {
    const strict = new CallbackUrlPolicy({ schemes: ['https:'], allowedHosts: [{ host: 'hooks.example.com' }] });
    expect(strict.check('http://hooks.example.com/')).toEqual({ ok: false, reason: 'its scheme must be https' });
    expect(strict.check('https://hooks.example.com/')).toMatchObject({ ok: true });
  });
});
