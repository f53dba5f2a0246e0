import { SILENT_LOG } from './define-job';
import { coreJobs, JobRegistry } from './registry';
import { sum, sumTo } from './sum.job';

const ctx = { attempt: 1, progress: () => undefined, log: SILENT_LOG };

describe('sum job', () => {
  it('is exact beyond 2^53 and reports progress', () => {
    expect(sumTo(10)).toBe(55n);
    expect(sumTo(1)).toBe(1n);
    // 1e8: partial sums are folded into a BigInt long before 2^53.
    expect(sumTo(1e8)).toBe((10n ** 8n * (10n ** 8n + 1n)) / 2n);
    expect(sum.run({ n: 123_456_789 }, ctx)).toBe(((123_456_789n * 123_456_790n) / 2n).toString());
    const reports: number[] = [];
    sumTo(3e8, (p) => reports.push(p));
    expect(reports.length).toBeGreaterThan(0);
    expect(reports.every((p, i) => p >= 0 && p < 100 && (i === 0 || p >= reports[i - 1]))).toBe(true);
  });

  it.each([{ n: 0 }, { n: 1e12 + 1 }])('rejects %j', (input) => {
    expect(sum.input.safeParse(input).success).toBe(false);
  });

  it('is registered', () => {
    expect(new JobRegistry(coreJobs).get('sum')).toBe(sum);
  });
});
