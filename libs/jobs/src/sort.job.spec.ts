import { SILENT_LOG } from './define-job';
import { coreJobs, JobRegistry } from './registry';
import { sort } from './sort.job';

const ctx = { attempt: 1, progress: () => undefined, log: SILENT_LOG };

describe('sort job', () => {
  it('sorts numerically both ways', () => {
    expect(sort.run({ numbers: [10, -2, 3.5, 1e9, 0], order: 'asc' }, ctx)).toEqual({ sorted: [-2, 0, 3.5, 10, 1e9] });
    expect(sort.run({ numbers: [1, 3, 2], order: 'desc' }, ctx)).toEqual({ sorted: [3, 2, 1] });
  });

  it.each([{ numbers: [1, 'a'] }, { numbers: [1], order: 'up' }])('rejects %j', (input) => {
    expect(sort.input.safeParse(input).success).toBe(false);
  });

  it('is registered', () => {
    expect(new JobRegistry(coreJobs).get('sort')).toBe(sort);
  });
});
