import { pbkdf2Sync } from 'node:crypto';
import { SILENT_LOG } from './define-job';
import { pbkdf2 } from './pbkdf2.job';
import { coreJobs, JobRegistry } from './registry';

const ctx = { attempt: 1, progress: () => undefined, log: SILENT_LOG };

describe('pbkdf2 job', () => {
  it('matches node:crypto, with the documented defaults', () => {
    const input = pbkdf2.input.parse({ password: 'pw', salt: 'salt', iterations: 1000 });
    expect(input).toEqual({ password: 'pw', salt: 'salt', iterations: 1000, keylen: 64, digest: 'sha512' });
    expect(pbkdf2.run(input, ctx)).toEqual({ hash: pbkdf2Sync('pw', 'salt', 1000, 64, 'sha512').toString('hex') });
  });

  it('accepts its maximum work in any shape', () => {
    for (const input of [
      { iterations: 10_000_000 },
      { iterations: 10_000_000, keylen: 20, digest: 'sha1' },
      { iterations: 5_000_000, keylen: 128 },
      { iterations: 1, keylen: 1024, digest: 'sha1' },
    ]) {
      expect(pbkdf2.input.safeParse({ password: 'p', salt: 's', ...input }).success).toBe(true);
    }
  });

  it.each([
    { password: '', salt: 's', iterations: 1 },
    { password: 'p', salt: 's', iterations: 10_000_001 },
    { password: 'p', salt: 's', iterations: 1, digest: 'md5' },
    { password: 'p', salt: 's', iterations: 10_000_000, keylen: 1024, digest: 'sha1' },
    { password: 'p', salt: 's', iterations: 5_000_001, keylen: 65 },
  ])('rejects %j', (input) => {
    expect(pbkdf2.input.safeParse(input).success).toBe(false);
  });

  it('shares runs and results only with the same caller (its input is a password)', () => {
    expect(pbkdf2.share).toBe('caller');
  });

  it('is registered', () => {
    expect(new JobRegistry(coreJobs).get('pbkdf2')).toBe(pbkdf2);
  });
});
