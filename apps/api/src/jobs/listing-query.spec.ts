import { DEFAULT_LIMIT, encodeCursor, parseListingQuery } from './listing-query';

describe('parseListingQuery', () => {
  it('takes no parameters: the first page of 20', () => {
    expect(parseListingQuery({}, 'key:a')).toEqual({ scope: 'key:a', limit: DEFAULT_LIMIT });
  });

  it('reads every filter, times as ISO 8601, and a cursor from a previous page', () => {
    const cursor = encodeCursor({ score: 1795409152006, id: '4c1e0f52-1b7e-4c2a-9a57-0f8d7f2e6b10' });
    expect(
      parseListingQuery({ type: 'fibonacci', status: 'completed', tag: 'order:42', since: '2026-11-27T18:00:00Z', until: '2026-11-27T19:00:00.500+01:00', limit: '50', cursor }, undefined),
    ).toEqual({
      scope: undefined,
      type: 'fibonacci',
      status: 'completed',
      tag: 'order:42',
      since: Date.UTC(2026, 10, 27, 18),
      until: Date.UTC(2026, 10, 27, 18, 0, 0, 500),
      limit: 50,
      cursor: { score: 1795409152006, id: '4c1e0f52-1b7e-4c2a-9a57-0f8d7f2e6b10' },
    });
  });

  it.each([
    [{ status: 'done' }, 'status'],
    [{ type: 'Bad Type' }, 'type'],
    [{ tag: 'a b' }, 'tag'],
    [{ since: 'yesterday' }, 'since'],
    [{ until: '1795409152' }, 'until'],
    [{ since: '2026-11-28', until: '2026-11-27' }, 'since'],
    [{ limit: '0' }, 'limit'],
    [{ limit: '101' }, 'limit'],
    [{ limit: '5.5' }, 'limit'],
    [{ cursor: 'bm90LWEtY3Vyc29y' }, 'cursor'],
    [{ type: ['a', 'b'] }, 'type'],
  ])('refuses %j with a 400 problem naming %s', (raw, name) => {
    expect(() => parseListingQuery(raw, 'key:a')).toThrow(expect.objectContaining({ code: 'INVALID_QUERY', detail: expect.stringMatching(new RegExp(`^${name}: `)) }));
  });
});
