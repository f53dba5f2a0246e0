import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from './config';

// A throwaway EC CA certificate (only parsed, never trusted by anything).
const CA = `-----BEGIN CERTIFICATE-----
MIIBgzCCASmgAwIBAgIUPKA8tLTyRe3wNmQI1aQSkBJw6tIwCgYIKoZIzj0EAwIw
FzEVMBMGA1UEAwwMdW5pdCB0ZXN0IENBMB4XDTI2MTEyNTE1MjAxMVoXDTI2MTEy
NjE1MjAxMVowFzEVMBMGA1UEAwwMdW5pdCB0ZXN0IENBMFkwEwYHKoZIzj0CAQYI
KoZIzj0DAQcDQgAErlo3czhQJdHfhdRPn6kc+H4uUmiB6ZEOXK2FCA8Ei7QUcbPJ
Ap1iWm+GCkXq/oUD6LNngCYKmtAB4NkfJottU6NTMFEwHQYDVR0OBBYEFPxs9mlm
TnIs7E4ce7mev9PfyX3DMB8GA1UdIwQYMBaAFPxs9mlmTnIs7E4ce7mev9PfyX3D
MA8GA1UdEwEB/wQFMAMBAf8wCgYIKoZIzj0EAwIDSAAwRQIhAJP6eEXo4Ow0x1y5
BCaoaHcWJgViV/tmXtiFJyL9SEx6AiBUuHdfKqASXJVwCLCXt/kPWIU+ZS0f8fWX
XmrtSAhVmQ==
-----END CERTIFICATE-----`;

describe('REDIS_TLS_CA_FILE', () => {
  let dir: string;
  const file = (name: string, text: string) => {
    const path = join(dir, name);
    writeFileSync(path, text);
    return path;
  };

  beforeAll(() => (dir = mkdtempSync(join(tmpdir(), 'nest-offload-ca-spec-'))));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('gives the CA to every Redis target, queue, cache and Sentinels', () => {
    const path = file('bundle.pem', `# our private CA\n${CA}\n${CA}\n`);
    const config = loadConfig({
      REDIS_SENTINELS: 's-0:26379',
      REDIS_SENTINEL_NAME: 'mymaster',
      REDIS_TLS: 'true',
      CACHE_REDIS_URL: 'rediss://cache:6380',
      REDIS_TLS_CA_FILE: path,
    });
    expect(config.queueRedis.ca).toBe(`${CA}\n${CA}\n`);
    expect(config.cacheRedis.ca).toBe(config.queueRedis.ca);
    expect(loadConfig({}).queueRedis.ca).toBeUndefined();
  });

  it.each([
    ['a missing file', () => join(dir, 'nope.pem'), /^REDIS_TLS_CA_FILE: cannot read ".*nope\.pem" \(ENOENT\)$/],
    ['a directory', () => dir, /^REDIS_TLS_CA_FILE: cannot read ".*" \(EISDIR\)$/],
    ['a file without certificates', () => file('key.pem', '-----BEGIN PRIVATE KEY-----\nabc\n-----END PRIVATE KEY-----\n'), /holds no PEM certificate/],
    ['a certificate that does not parse', () => file('broken.pem', `${CA}\n-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n`), /certificate 2 of 2 in ".*broken\.pem" does not parse/],
  ])('stops start-up on %s, naming the variable', (_, path, message) => {
    const attempt = () => loadConfig({ REDIS_URL: 'rediss://queue:6380', REDIS_TLS_CA_FILE: path() });
    expect(attempt).toThrow(ConfigError);
    let problems: string[] = [];
    try {
      attempt();
    } catch (error) {
      problems = (error as ConfigError).problems;
    }
    expect(problems).toEqual([expect.stringMatching(message)]);
  });

  it('is refused when no Redis is reached over TLS', () => {
    expect(() => loadConfig({ REDIS_URL: 'redis://queue:6379', REDIS_TLS_CA_FILE: file('ca.pem', CA) })).toThrow(/REDIS_TLS_CA_FILE: set, but no Redis is reached over TLS/);
    expect(loadConfig({ REDIS_URL: 'redis://queue:6379', CACHE_REDIS_URL: 'rediss://cache:6380', REDIS_TLS_CA_FILE: file('ca.pem', CA) }).cacheRedis.ca).toBe(`${CA}\n`);
  });
});
