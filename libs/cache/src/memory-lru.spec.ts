import { MemoryLru } from './memory-lru';

describe('MemoryLru', () => {
  it('evicts the least recently used entries past its budget', () => {
    const lru = new MemoryLru<string>(10, 10);
    lru.set('a', 'A', 4, Infinity);
    lru.set('b', 'B', 4, Infinity);
    expect(lru.get('a')).toBe('A'); // a is now more recent than b
    lru.set('c', 'C', 4, Infinity);
    expect(lru.get('b')).toBeUndefined();
    expect([lru.get('a'), lru.get('c')]).toEqual(['A', 'C']);
    expect(lru.size).toBe(8);
  });

  it('forgets expired entries and refuses oversized ones', () => {
    const lru = new MemoryLru<string>(100, 10);
    lru.set('old', 'x', 1, 1000);
    expect(lru.get('old', 999)).toBe('x');
    expect(lru.get('old', 1000)).toBeUndefined();
    lru.set('big', 'x', 11, Infinity);
    expect(lru.get('big')).toBeUndefined();
    expect(lru.size).toBe(0);
  });

  it('replaces an entry without counting it twice', () => {
    const lru = new MemoryLru<string>(100, 100);
    lru.set('a', 'one', 5, Infinity);
    lru.set('a', 'two', 7, Infinity);
    expect([lru.get('a'), lru.size]).toEqual(['two', 7]);
  });

  it('holds nothing with a zero budget', () => {
    const lru = new MemoryLru<string>(0, 0);
    lru.set('a', 'A', 1, Infinity);
    expect(lru.get('a')).toBeUndefined();
  });
});
