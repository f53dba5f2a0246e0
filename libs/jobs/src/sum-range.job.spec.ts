import { coreJobs, JobRegistry } from './registry';
import { sumRange, sumRangeJob } from './sum-range.job';

describe('sum-range job', () => {
  it('sums a range exactly', () => {
    expect(sumRange(1, 10)).toBe(55n);
    expect(sumRange(4, 6)).toBe(15n);
    expect(sumRange(1e12, 1e12)).toBe(10n ** 12n);
  });

  it('refuses a range that ends before it starts', () => {
    expect(sumRangeJob.input.safeParse({ from: 5, to: 5 }).success).toBe(true);
    expect(sumRangeJob.input.safeParse({ from: 6, to: 5 }).success).toBe(false);
  });

  it('is registered', () => {
    expect(new JobRegistry(coreJobs).get('sum-range')).toBe(sumRangeJob);
  });
});
