import { parsePreferWait } from './prefer-wait';

describe('parsePreferWait', () => {
  it.each([
    [undefined, 0],
    ['wait=5', 5],
    ['respond-async, wait=10', 10],
    ['WAIT = 3', 3],
    ['wait="7"', 7],
    ['wait=100', 30],
    ['wait=-1', 0],
    ['wait=abc', 0],
    ['wait=1e3', 0],
    ['wait=99999999999999999999', 0],
    ['handling=lenient', 0],
  ])('%j → %d', (header, expected) => {
    expect(parsePreferWait(header, 30)).toBe(expected);
  });

  it('reads a repeated header', () => {
    expect(parsePreferWait(['respond-async', 'wait=4'], 30)).toBe(4);
  });
});
