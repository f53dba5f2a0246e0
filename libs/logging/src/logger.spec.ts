import { logFormat } from './logger';

describe('logFormat', () => {
  it('is readable on a terminal outside production, JSON everywhere else', () => {
    expect(logFormat({ logFormat: 'auto', env: 'development' }, true)).toBe('pretty');
    expect(logFormat({ logFormat: 'auto', env: 'test' }, true)).toBe('pretty');
    expect(logFormat({ logFormat: 'auto', env: 'production' }, true)).toBe('json');
    expect(logFormat({ logFormat: 'auto', env: 'development' }, false)).toBe('json');
  });

  it('does what LOG_FORMAT says when it says json or pretty', () => {
    expect(logFormat({ logFormat: 'json', env: 'development' }, true)).toBe('json');
    expect(logFormat({ logFormat: 'pretty', env: 'production' }, false)).toBe('pretty');
  });
});
