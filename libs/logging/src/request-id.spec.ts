import { requestIdFrom } from './request-id';

describe('requestIdFrom', () => {
  it('keeps a plain caller id', () => {
    expect(requestIdFrom('abc-123_x.y:z')).toBe('abc-123_x.y:z');
    expect(requestIdFrom(['first', 'second'])).toBe('first');
  });

  it.each([undefined, '', 'has space', 'new\nline', 'x'.repeat(129), '<script>'])('replaces %j with a UUID', (value) => {
    expect(requestIdFrom(value)).toMatch(/^[0-9a-f-]{36}$/);
  });
});
