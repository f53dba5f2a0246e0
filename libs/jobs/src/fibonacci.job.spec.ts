import { SILENT_LOG } from './define-job';
import { fibonacci } from './fibonacci.job';
import { coreJobs, JobRegistry } from './registry';

const ctx = { attempt: 1, progress: () => undefined, log: SILENT_LOG };

describe('fibonacci job', () => {
  it('computes the sequence', () => {
    expect([0, 1, 2, 10, 30].map((n) => fibonacci.run({ n }, ctx))).toEqual([0, 1, 1, 55, 832040]);
  });

  it.each([{ n: 51 }, { n: 1.5 }, { n: '5' }, { n: 5, extra: true }])('rejects %j', (input) => {
    expect(fibonacci.input.safeParse(input).success).toBe(false);
  });

  it('is registered', () => {
    expect(new JobRegistry(coreJobs).get('fibonacci')).toBe(fibonacci);
  });
});
