import { formatFailure } from '@app/jobs';
import { isFinal, iso, JobRecord, viewOfCached, viewOfCancelled, viewOfJob } from './job-view';

const job = (over: Partial<JobRecord> = {}): JobRecord => ({
  id: 'id-1',
  name: 'resize-image',
  progress: 0,
  returnvalue: null,
  attemptsMade: 0,
  attemptsStarted: 0,
  timestamp: Date.UTC(2026, 0, 1),
  ...over,
});

describe('job views', () => {
  it('maps BullMQ states to the five statuses', () => {
    expect(['waiting', 'prioritized', 'delayed'].map((s) => viewOfJob(job(), s).status)).toEqual(Array(3).fill('queued'));
    // A fan-out job whose chunks run.
    expect(viewOfJob(job(), 'waiting-children').status).toBe('active');
    expect(viewOfJob(job({ progress: 40, attemptsStarted: 1, processedOn: Date.UTC(2026, 0, 1, 0, 0, 1) }), 'active')).toEqual({
      id: 'id-1',
      type: 'resize-image',
      status: 'active',
      progress: 40,
      attempts: 1,
      createdAt: '2026-01-01T00:00:00.000Z',
      startedAt: '2026-01-01T00:00:01.000Z',
    });
  });

  it('shows the result of a completed job and the coded error of a failed one', () => {
    const done = viewOfJob(job({ returnvalue: '55', attemptsMade: 1, finishedOn: Date.UTC(2026, 0, 2) }), 'completed');
    expect(done).toMatchObject({ status: 'completed', result: '55', progress: 100, finishedAt: '2026-01-02T00:00:00.000Z' });
    const failed = viewOfJob(job({ failedReason: formatFailure('JOB_TIMEOUT', 'slow'), attemptsMade: 1 }), 'failed');
    expect(failed).toMatchObject({ status: 'failed', error: { code: 'JOB_TIMEOUT', message: 'slow' } });
    expect(failed.result).toBeUndefined();
  });

  it('shows a job failed with JOB_CANCELLED as cancelled', () => {
    expect(viewOfJob(job({ failedReason: formatFailure('JOB_CANCELLED', 'x') }), 'failed').status).toBe('cancelled');
  });

  it('builds views of cached results and queued cancellations', () => {
    const cached = viewOfCached({ id: 'a', type: 'fibonacci', result: 5, attempts: 1, createdAt: 0, startedAt: 1, finishedAt: 2 });
    expect(cached).toMatchObject({ id: 'a', status: 'completed', cached: true, result: 5 });
    const cancelled = viewOfCancelled(viewOfJob(job(), 'waiting'), Date.UTC(2026, 0, 3));
    expect(cancelled).toMatchObject({ status: 'cancelled', error: { code: 'JOB_CANCELLED' }, finishedAt: '2026-01-03T00:00:00.000Z' });
    expect([cached, cancelled].every(isFinal)).toBe(true);
    expect(isFinal({ status: 'active' })).toBe(false);
  });
});

describe('iso', () => {
  it('formats epoch ms exactly as toISOString, within a second and across seconds', () => {
    const samples = [1, 999, 1000, 1_763_884_800_000, 1_763_884_800_007, 1_763_884_800_042, 1_763_884_800_999, 1_763_884_801_000, 253_402_300_799_999];
    for (const ms of [...samples, ...samples.reverse()]) expect(iso(ms)).toBe(new Date(ms).toISOString());
    for (let i = 0; i < 5000; i++) {
      const ms = Math.floor(Math.random() * 4_000_000_000_000);
      expect(iso(ms)).toBe(new Date(ms).toISOString());
    }
  });

  it('falls back to toISOString outside plain years and for fractions; undefined for no time', () => {
    for (const ms of [253_402_300_800_000, 1.5, -1000]) expect(iso(ms)).toBe(new Date(ms).toISOString());
    expect(iso(undefined)).toBeUndefined();
    expect(iso(0)).toBeUndefined();
  });
});
