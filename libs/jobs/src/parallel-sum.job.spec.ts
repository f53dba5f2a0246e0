import { SILENT_LOG } from './define-job';
import { parallelSum, ranges } from './parallel-sum.job';
import { coreJobs, JobRegistry } from './registry';
import { sumRangeJob } from './sum-range.job';

const ctx = { attempt: 1, progress: () => undefined, log: SILENT_LOG };

describe('parallel-sum job', () => {
  it('splits 1..n into nearly equal ranges that cover it exactly once', () => {
    for (const [n, chunks] of [[10, 3], [7, 7], [3, 8], [1e12, 64]]) {
      const parts = ranges(n, chunks);
      expect(parts).toHaveLength(Math.min(n, chunks));
      expect(parts[0].from).toBe(1);
      expect(parts.at(-1)!.to).toBe(n);
      for (let i = 1; i < parts.length; i++) expect(parts[i].from).toBe(parts[i - 1].to + 1);
    }
  });

  it('fans out to sum-range on its queue, and adds the chunks up exactly', async () => {
    expect(parallelSum.queue).toBe(sumRangeJob.queue);
    expect(parallelSum.fanOut!.child).toBe(sumRangeJob);
    const input = parallelSum.input.parse({ n: 1_000_003, chunks: 7 });
    const parts = parallelSum.fanOut!.split(input).map((chunk) => sumRangeJob.run(sumRangeJob.input.parse(chunk), ctx));
    expect(parallelSum.fanOut!.merge(parts, input)).toBe(((1_000_003n * 1_000_004n) / 2n).toString());
    expect(await parallelSum.run(input, ctx)).toBe(((1_000_003n * 1_000_004n) / 2n).toString());
  });

  it('is registered, with its child', () => {
    const registry = new JobRegistry(coreJobs);
    expect(registry.get('parallel-sum')).toBe(parallelSum);
    expect(registry.get(sumRangeJob.name)).toBe(sumRangeJob);
  });
});
