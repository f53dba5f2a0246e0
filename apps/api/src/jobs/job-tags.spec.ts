import { MAX_TAG_LENGTH, parseJobTags } from './job-tags';

describe('parseJobTags', () => {
  it('is undefined without the header', () => {
    expect(parseJobTags(undefined)).toBeUndefined();
  });

  it('reads comma-separated tags, trimmed, each once, in order', () => {
    expect(parseJobTags('order:42, export')).toEqual(['order:42', 'export']);
    expect(parseJobTags('a,b , a')).toEqual(['a', 'b']);
    expect(parseJobTags(['x', 'y/z'])).toEqual(['x', 'y/z']);
    expect(parseJobTags('t'.repeat(MAX_TAG_LENGTH))).toHaveLength(1);
  });

  it.each([[''], ['a,,b'], ['a b'], ['-lead'], ['é'], ['a;b'], ['t'.repeat(MAX_TAG_LENGTH + 1)], [Array.from({ length: 11 }, (_, i) => `t${i}`).join(',')]])(
    'refuses %j with a 400 problem',
    (header) => {
      expect(() => parseJobTags(header)).toThrow(expect.objectContaining({ code: 'INVALID_HEADER' }));
    },
  );
});
