import { constants, PerformanceObserver } from 'node:perf_hooks';
import { uploaded, YOUNG_COLLECTION_BYTES } from './young-collection';

/** The collections V8 ran that were asked for (`gc`), not its own, by kind, while `run` runs. */
async function forcedCollections(run: () => void): Promise<number[]> {
  const kinds: number[] = [];
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      // why the cast: Node's types leave out a gc entry's `detail`.
      const { detail } = entry as unknown as { detail: { kind: number; flags: number } };
      if (detail.flags & constants.NODE_PERFORMANCE_GC_FLAGS_FORCED) kinds.push(detail.kind);
    }
  });
  observer.observe({ entryTypes: ['gc'] });
  run();
  // why wait: the observer hears of a collection on a later turn of the loop.
  await new Promise((resolve) => setTimeout(resolve, 50));
  observer.disconnect();
  return kinds;
}

describe('uploaded', () => {
  it('collects the young generation once per YOUNG_COLLECTION_BYTES passed, and only then', async () => {
    // Whatever an earlier count left: one collection, and the count starts again.
    expect(await forcedCollections(() => uploaded(YOUNG_COLLECTION_BYTES))).toEqual([constants.NODE_PERFORMANCE_GC_MINOR]);
    expect(await forcedCollections(() => uploaded(YOUNG_COLLECTION_BYTES - 1))).toEqual([]);
    expect(await forcedCollections(() => uploaded(1))).toEqual([constants.NODE_PERFORMANCE_GC_MINOR]);
    expect(await forcedCollections(() => [1, 2, 3].forEach(() => uploaded(YOUNG_COLLECTION_BYTES / 2)))).toEqual([constants.NODE_PERFORMANCE_GC_MINOR]);
  });

  it('leaves no `gc` global behind', () => {
    uploaded(YOUNG_COLLECTION_BYTES);
    expect((globalThis as { gc?: unknown }).gc).toBeUndefined();
  });
});
