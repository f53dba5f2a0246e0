import { z } from 'zod';
import { canonicalJson, contentKey, defineJob, JobRegistry, type JobSchedule } from '@app/jobs';
import { SCHEDULED_JOB_ID } from './queue.keys';
import { checkSchedules, nextRunOf, scheduledJob } from './schedules';

const declare = (name: string, schedules: JobSchedule<{ n: number; mode?: string }>[]) =>
  defineJob({
    name,
    version: 2,
    description: '',
    input: z.strictObject({ n: z.int(), mode: z.string().default('full') }),
    output: z.unknown(),
    timeoutMs: 1000,
    cacheTtlSeconds: 0,
    retry: { attempts: 4, backoffMs: 50 },
    priority: 7,
    schedules,
    run: () => 1,
  });

describe('schedules', () => {
  it('gives each tick the JobData and options a submission of that input gets', () => {
    const def = declare('report', [{ name: 'nightly', cron: '0 3 * * *', input: { n: 1 } }]);
    const s = scheduledJob(def, def.schedules[0], 3600);
    const inputJson = canonicalJson({ mode: 'full', n: 1 });
    expect(s.id).toBe('report:nightly');
    expect(s.repeat).toEqual({ pattern: '0 3 * * *' });
    expect(s.data).toEqual({ inputJson, version: 2, key: contentKey(def, inputJson), schedule: { id: 'report:nightly', spec: expect.stringMatching(/^[0-9a-f]{16}$/) } });
    expect(s.opts).toMatchObject({ priority: 7, attempts: 4, backoff: { type: 'exponential', delay: 50 }, removeOnComplete: { age: 3600 } });
    expect(SCHEDULED_JOB_ID.test(`repeat:${s.id}:1795489200000`)).toBe(true);
    expect(SCHEDULED_JOB_ID.test('repeat:report:nightly:1:2')).toBe(false);
  });

  it('fingerprints the whole declaration: timing, input, version and options', () => {
    const spec = (def: ReturnType<typeof declare>, retention = 3600) => scheduledJob(def, def.schedules[0], retention).data.schedule!.spec;
    const base = spec(declare('report', [{ name: 'x', everyMs: 1000, input: { n: 1 } }]));
    expect(spec(declare('report', [{ name: 'x', everyMs: 1000, input: { n: 1, mode: 'full' } }]))).toBe(base);
    expect(spec(declare('report', [{ name: 'x', everyMs: 2000, input: { n: 1 } }]))).not.toBe(base);
    expect(spec(declare('report', [{ name: 'x', everyMs: 1000, input: { n: 2 } }]))).not.toBe(base);
    expect(spec(declare('report', [{ name: 'x', everyMs: 1000, input: { n: 1 } }]), 60)).not.toBe(base);
  });

  it('computes the next run with BullMQ\'s own rules', () => {
    const now = Date.UTC(2026, 10, 23, 4, 30);
    expect(nextRunOf({ name: 'x', cron: '0 3 * * *', input: {} }, now)).toBe(Date.UTC(2026, 10, 24, 3, 0));
    expect(nextRunOf({ name: 'x', cron: '0 3 * * *', tz: 'America/New_York', input: {} }, now)).toBe(Date.UTC(2026, 10, 23, 8, 0));
  });

  it('stops start-up on a cron expression BullMQ cannot parse, naming the type and schedule', () => {
    const ok = new JobRegistry([declare('fine', [{ name: 'a', cron: '*/5 * * * * *', input: { n: 1 } }, { name: 'b', everyMs: 5000, input: { n: 1 } }])]);
    expect(() => checkSchedules(ok)).not.toThrow();
    const bad = new JobRegistry([
      declare('report', [{ name: 'nightly', cron: '61 * * * *', input: { n: 1 } }]),
      declare('other', [{ name: 'zoned', cron: '0 3 * * *', tz: 'Mars/Olympus', input: { n: 1 } }]),
    ]);
    expect(() => checkSchedules(bad)).toThrow(/Job type "report": schedule "nightly": invalid cron expression "61 \* \* \* \*" \(.*59/);
    expect(() => checkSchedules(bad)).toThrow(/Job type "other": schedule "zoned": invalid cron expression "0 3 \* \* \*" in time zone "Mars\/Olympus"/);
  });
});
