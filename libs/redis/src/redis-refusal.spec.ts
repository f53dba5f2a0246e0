import { loadConfig } from '@app/config';
import { redisProblem } from './redis-refusal';

const tlsError = (message: string, code: string) => Object.assign(new Error(message), { code });
const WRONGPASS = new Error('WRONGPASS invalid username-password pair or user is disabled.');

describe('redisProblem', () => {
  const shared = loadConfig({ REDIS_URL: 'rediss://queue.internal:6380', REDIS_USERNAME: 'nest-offload-api', REDIS_PASSWORD: 'not-this' }).queueRedis;
  const inUrl = loadConfig({ CACHE_REDIS_URL: 'rediss://cache-user:not-this@cache.internal:6380' }).cacheRedis;
  const sentinel = loadConfig({ REDIS_SENTINELS: 's-0:26379', REDIS_SENTINEL_NAME: 'mymaster', REDIS_PASSWORD: 'not-this', REDIS_TLS: 'true' }).queueRedis;

  it('names REDIS_PASSWORD, the user and the server when the shared credentials are refused, quoting Redis', () => {
    expect(redisProblem(WRONGPASS, shared)).toBe(
      'REDIS_PASSWORD: queue.internal:6380 (from REDIS_URL) refused the credentials REDIS_USERNAME/REDIS_PASSWORD give (user "nest-offload-api"): ' +
        'WRONGPASS invalid username-password pair or user is disabled.',
    );
  });

  it('names the URL variable when the credentials are in the URL, and never echoes the password', () => {
    const problem = redisProblem(WRONGPASS, inUrl);
    expect(problem).toBe('CACHE_REDIS_URL: cache.internal:6380 refused the credentials in the URL (user "cache-user"): WRONGPASS invalid username-password pair or user is disabled.');
    expect(problem).not.toContain('not-this');
  });

  it('finds the refusal inside the errors ioredis wraps (ready check, Sentinel)', () => {
    expect(redisProblem(new Error('Ready check failed: NOAUTH Authentication required.'), loadConfig({}).queueRedis)).toBe(
      'REDIS_PASSWORD: 127.0.0.1:6379 (from REDIS_URL) requires credentials and none are set (REDIS_USERNAME/REDIS_PASSWORD, or user:password in a URL): NOAUTH Authentication required.',
    );
    const wrapped = new Error('All sentinels are unreachable. Retrying from scratch after 10ms. Last error: WRONGPASS invalid username-password pair or user is disabled.');
    expect(redisProblem(wrapped, sentinel)).toMatch(/^REDIS_PASSWORD: the Sentinels of "mymaster" or its primary \(from REDIS_SENTINELS\) refused .*: WRONGPASS invalid/);
  });

  it('names REDIS_USERNAME when the ACL user may not run a command', () => {
    expect(redisProblem(new Error("NOPERM this user has no permissions to run the 'info' command"), shared, '10.0.0.5:6380')).toMatch(
      /^REDIS_USERNAME: 10\.0\.0\.5:6380 \(from REDIS_URL\) denies user "nest-offload-api" a command, key or channel the apps use .*: NOPERM this user has no permissions to run the 'info' command$/,
    );
  });

  it('names REDIS_TLS_CA_FILE for a certificate from an unknown CA, with or without one set', () => {
    const untrusted = tlsError('self-signed certificate in certificate chain', 'SELF_SIGNED_CERT_IN_CHAIN');
    expect(redisProblem(untrusted, shared)).toBe(
      'REDIS_TLS_CA_FILE: the certificate of queue.internal:6380 (from REDIS_URL) is not trusted; set REDIS_TLS_CA_FILE to the PEM file of the CA that signed it: ' +
        'self-signed certificate in certificate chain (SELF_SIGNED_CERT_IN_CHAIN)',
    );
    const withCa = { ...shared, ca: '-----BEGIN CERTIFICATE-----' };
    expect(redisProblem(tlsError('unable to get local issuer certificate', 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY'), withCa)).toMatch(
      /^REDIS_TLS_CA_FILE: the certificate of .* is signed by no CA in REDIS_TLS_CA_FILE or Node's defaults: unable to get local issuer certificate/,
    );
    // Through Sentinel, only the text is left.
    expect(redisProblem(new Error('All sentinels are unreachable. Last error: self-signed certificate in certificate chain'), sentinel)).toMatch(/^REDIS_TLS_CA_FILE: /);
  });

  it('names the URL variable for a certificate of another host or out of date', () => {
    const altname = tlsError("Hostname/IP does not match certificate's altnames: Host: queue.internal. is not in the cert's altnames: DNS:other", 'ERR_TLS_CERT_ALTNAME_INVALID');
    expect(redisProblem(altname, shared)).toMatch(/^REDIS_URL: the certificate of queue\.internal:6380 is not issued for that host name; .*: Hostname\/IP does not match .* \(ERR_TLS_CERT_ALTNAME_INVALID\)$/);
    expect(redisProblem(tlsError('certificate has expired', 'CERT_HAS_EXPIRED'), inUrl)).toMatch(/^CACHE_REDIS_URL: the certificate of cache\.internal:6380 is outside its validity period/);
  });

  it('says nothing of an outage: the app waits for Redis instead', () => {
    for (const error of [
      tlsError('connect ECONNREFUSED 127.0.0.1:6379', 'ECONNREFUSED'),
      tlsError('connect ETIMEDOUT', 'ETIMEDOUT'),
      tlsError('read ECONNRESET', 'ECONNRESET'),
      tlsError('getaddrinfo ENOTFOUND queue.internal', 'ENOTFOUND'),
      new Error('Connection is closed.'),
      new Error('LOADING Redis is loading the dataset in memory'),
      new Error('All sentinels are unreachable. Retrying from scratch after 10ms. Last error: connect ECONNREFUSED 127.0.0.1:26379'),
    ]) {
      expect(redisProblem(error, shared)).toBeUndefined();
    }
  });
});
