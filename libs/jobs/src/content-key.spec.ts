import { canonicalJson, deepCanonicalJson } from './content-key';

describe('canonicalJson', () => {
  it('writes the same text without recursion as with it', () => {
    const samples: unknown[] = [
      { b: 1, a: [3, { d: null, c: 'x' }, [true, { f: 1.5, e: [] }]], z: {} },
      [1, 'two', null, { y: undefined, x: () => 1 }, undefined],
      { list: [new Date(0), new String('ab')], nested: { b: { b: 2, a: 1 }, a: '\u2028"' } },
      'text',
      42,
      null,
    ];
    for (const sample of samples) expect(deepCanonicalJson(sample)).toBe(canonicalJson(sample));
  });

  it('takes an input nested deeper than the stack (200,000 levels), keys sorted at every level', () => {
    const depth = 200_000;
    let deep: unknown = 1;
    for (let i = 0; i < depth; i++) deep = { z: 0, a: [deep] };
    const text = canonicalJson(deep);
    expect(text.length).toBe(depth * '{"a":[],"z":0}'.length + 1);
    expect(text.startsWith('{"a":[{"a":[')).toBe(true);
    expect(text.includes('{"a":[{"a":[1],"z":0}],"z":0}')).toBe(true);
    expect(text.endsWith('],"z":0}],"z":0}')).toBe(true);
  });
});
