import { matchesEtag, parseRange } from './byte-range';

describe('parseRange', () => {
  it.each([
    ['bytes=0-99', 1000, { start: 0, end: 99 }],
    ['bytes=900-', 1000, { start: 900, end: 999 }],
    ['bytes=990-2000', 1000, { start: 990, end: 999 }],
    ['bytes=-100', 1000, { start: 900, end: 999 }],
    ['bytes=-5000', 1000, { start: 0, end: 999 }],
    ['bytes=1000-', 1000, 'unsatisfiable'],
    ['bytes=1000-1001', 1000, 'unsatisfiable'],
    ['bytes=-0', 1000, 'unsatisfiable'],
    ['bytes=5-2', 1000, undefined],
    ['bytes=0-1,5-9', 1000, undefined],
    ['items=0-1', 1000, undefined],
    ['bytes=-', 1000, undefined],
    [undefined, 1000, undefined],
  ])('%s of %d bytes is %j', (header, size, range) => {
    expect(parseRange(header, size)).toEqual(range);
  });
});

describe('matchesEtag', () => {
  it('matches a listed, a weak or any tag, and nothing else', () => {
    expect(matchesEtag('"a", "b"', '"b"')).toBe(true);
    expect(matchesEtag('W/"b"', '"b"')).toBe(true);
    expect(matchesEtag('*', '"b"')).toBe(true);
    expect(matchesEtag('"c"', '"b"')).toBe(false);
    expect(matchesEtag(undefined, '"b"')).toBe(false);
  });
});
