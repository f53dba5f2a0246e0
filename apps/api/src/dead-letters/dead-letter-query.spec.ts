import { parseDeadLetterQuery, parseReplayRequest } from './dead-letter-query';

describe('dead letter filters', () => {
  it('reads the listing query, and refuses what is not a filter of dead letters', () => {
    expect(parseDeadLetterQuery({ type: 'fibonacci', code: 'JOB_LOST', since: '2026-11-27T00:00:00Z', limit: '5' })).toEqual({
      type: 'fibonacci',
      code: 'JOB_LOST',
      since: Date.parse('2026-11-27T00:00:00Z'),
      until: undefined,
      limit: 5,
      cursor: undefined,
    });
    for (const raw of [{ code: 'JOB_CANCELLED' }, { code: 'JOB_EXPIRED' }, { status: 'failed' }, { tag: 'x' }, { limit: '101' }]) {
      expect(() => parseDeadLetterQuery(raw)).toThrow(expect.objectContaining({ code: 'INVALID_QUERY' }));
    }
  });

  it('reads a replay body: the same filter as JSON, limit up to 1000 (100 by default), dryRun', () => {
    expect(parseReplayRequest(undefined)).toEqual({ type: undefined, code: undefined, since: undefined, until: undefined, limit: 100, dryRun: false });
    expect(parseReplayRequest({ type: 'fibonacci', until: '2026-11-27T19:00:00Z', limit: 1000, dryRun: true })).toMatchObject({ type: 'fibonacci', until: Date.parse('2026-11-27T19:00:00Z'), limit: 1000, dryRun: true });
    for (const body of [[], 'x', { limit: 1001 }, { limit: '5' }, { dryRun: 'yes' }, { cursor: 'abc' }, { since: 5 }, { code: 'NOPE' }]) {
      expect(() => parseReplayRequest(body)).toThrow(expect.objectContaining({ code: 'INVALID_QUERY' }));
    }
  });
});
