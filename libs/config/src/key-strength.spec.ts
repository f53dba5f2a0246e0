import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { alphabetSize, estimatedBits, keyWeakness, weakKeys } from './key-strength';

describe('key strength', () => {
  it('reads the alphabet from the character classes a key uses', () => {
    expect(alphabetSize('0123456789')).toBe(10);
    expect(alphabetSize('deadbeef01')).toBe(16);
    expect(alphabetSize('DEADBEEF01')).toBe(16);
    expect(alphabetSize('abcxyz0123')).toBe(36);
    expect(alphabetSize('abcXYZ0123')).toBe(62);
    expect(alphabetSize('abcXYZ01-_')).toBe(64); // base64url
    expect(alphabetSize('abcXYZ01+/==')).toBe(64); // base64, padding adds nothing
    expect(alphabetSize('abcXYZ01!~')).toBe(94); // printable ASCII
    expect(estimatedBits('f'.repeat(32))).toBe(128);
  });

  const times = 200;
  /** `times` keys from one shell that runs `command` that many times. why one shell: a spawn from this
   * process (a Jest worker with a large heap) costs far more than from sh. */
  const fromShell = (command: string) => () => {
    const keys = execFileSync('sh', ['-c', `for i in $(seq ${times}); do ${command}; done`], { encoding: 'utf8' }).trim().split('\n');
    expect(keys).toHaveLength(times);
    return keys;
  };
  const fromNode = (generate: () => string) => () => Array.from({ length: times }, generate);

  it.each([
    ['openssl rand -hex 32', fromShell('openssl rand -hex 32')],
    ['openssl rand -base64 32', fromShell('openssl rand -base64 32')],
    ['32 random bytes as base64url', fromNode(() => randomBytes(32).toString('base64url'))],
    ['16 random bytes as hex (128 bits exactly)', fromNode(() => randomBytes(16).toString('hex'))],
  ])('accepts %s, every time', (_name, generate) => {
    for (const key of generate()) expect({ key, weakness: keyWeakness(key) }).toEqual({ key, weakness: undefined });
  });

  it.each([
    ['16 a', 'a'.repeat(16)],
    ['a word and a counter', 'key-a-0123456789abcdef'],
    ['a padded word', `dashboard-e2e-${'k'.repeat(20)}`],
    ['64 a', 'a'.repeat(64)],
    ['a repeated pair', 'ab'.repeat(40)],
    ['a repeated run', 'abcd'.repeat(16)],
    ['15 random bytes as hex (120 bits)', randomBytes(15).toString('hex')],
    ['a run, twice', '0123456789abcdef0123456789abcdef'],
    ['a run of letters', 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz'],
    ['a stretch repeated', `${randomBytes(8).toString('hex')}9f86d081${randomBytes(8).toString('hex')}9f86d081`],
    ['a phrase', 'Password!2024#Spring'],
    ['a named key', 'CompanyName-prod-api-key-2024-v1'],
  ])('refuses %s', (_name, key) => expect(keyWeakness(key)).toBeDefined());

  it('names the variable and the key, never the key itself', () => {
    const problems = weakKeys('ADMIN_API_KEYS', [
      { name: 'ops', key: 'a'.repeat(64) },
      { name: 'ci', key: randomBytes(32).toString('hex') },
    ]);
    expect(problems).toEqual([expect.stringMatching(/^ADMIN_API_KEYS: the key named "ops" is too weak \(only 1 distinct characters in 64/)]);
    expect(problems[0]).not.toContain('a'.repeat(16));
  });
});
