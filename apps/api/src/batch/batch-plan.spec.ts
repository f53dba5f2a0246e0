import { coreJobs } from '@app/jobs';
import { ApiError } from '../http/api-error';
import { prepareJob } from '../jobs/job-input';
import { batchItems, groupWork } from './batch-plan';

const fibonacci = coreJobs.find((def) => def.name === 'fibonacci')!;

const attempt = (body: unknown) => {
  try {
    return prepareJob(fibonacci, body, 'anonymous');
  } catch (error) {
    return error as ApiError;
  }
};

describe('batchItems', () => {
  it('reads the items of {"items": [...]}', () => {
    expect(batchItems({ items: [{ n: 1 }, 'x'] }, 10)).toEqual([{ n: 1 }, 'x']);
  });

  it.each([
    ['an array', [{ n: 1 }]],
    ['no items', {}],
    ['empty items', { items: [] }],
    ['items that are not a list', { items: { n: 1 } }],
    ['an unknown field', { items: [{ n: 1 }], wait: 5 }],
    ['more than the maximum', { items: [1, 2, 3] }],
  ])('refuses %s with INVALID_INPUT', (_, body) => {
    expect(() => batchItems(body, 2)).toThrow(expect.objectContaining({ code: 'INVALID_INPUT', status: 400 }));
  });
});

describe('groupWork', () => {
  it('joins identical items, equal after defaults and key order, in order of first occurrence', () => {
    const items = [attempt({ n: 5 }), attempt({ n: -1 }), attempt({ n: 6 }), attempt({ n: 5 }), attempt({ n: 6 }), attempt({ n: 7 })];
    expect(items[1]).toBeInstanceOf(ApiError);
    const groups = groupWork(items, items.length);
    expect(groups.map((g) => g.items)).toEqual([[0, 3], [2, 4], [5]]);
    expect(groups[0].job.inputJson).toBe('{"n":5}');
  });

  it('leaves out the items past the admitted ones', () => {
    const items = [attempt({ n: 1 }), attempt({ n: 2 }), attempt({ n: 1 })];
    expect(groupWork(items, 2).map((g) => g.items)).toEqual([[0], [1]]);
  });
});
