import { MAX_START_WITHIN_MS } from '@app/jobs';
import { parseStartWithin } from './start-within';

describe('parseStartWithin', () => {
  it('is undefined without the header: the type decides', () => {
    expect(parseStartWithin(undefined)).toBeUndefined();
  });

  it('reads seconds, to the millisecond', () => {
    expect(parseStartWithin('2')).toBe(2000);
    expect(parseStartWithin(' 2.5 ')).toBe(2500);
    expect(parseStartWithin('0.001')).toBe(1);
  });

  it('caps at a week', () => {
    expect(parseStartWithin('999999999')).toBe(MAX_START_WITHIN_MS);
  });

  it.each([[''], ['0'], ['0.0'], ['-1'], ['1e3'], ['2s'], ['1.2345'], ['9999999999'], [['1', '2']]])('refuses %j with a 400 problem', (header) => {
    expect(() => parseStartWithin(header)).toThrow(expect.objectContaining({ code: 'INVALID_HEADER' }));
  });
});
