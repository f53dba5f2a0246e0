import { JobFailureCode } from '@app/jobs';
import type { JobView } from '../jobs/job-view';
import { INLINE_BODY_MAX, webhookBody } from './webhook-payload';

describe('webhookBody', () => {
  const view: JobView = { id: 'j1', type: 'resize-image', status: 'completed', result: '55', attempts: 1, createdAt: '2026-11-23T00:00:00.000Z', finishedAt: '2026-11-23T00:00:01.000Z' };

  it('is a Standard Webhooks event carrying the final view', () => {
    expect(JSON.parse(webhookBody(view))).toEqual({ type: 'job.completed', timestamp: '2026-11-23T00:00:01.000Z', data: view });
    const failed = { ...view, status: 'failed' as const, result: undefined, error: { code: JobFailureCode.JOB_FAILED, message: 'x' } };
    expect(JSON.parse(webhookBody(failed))).toMatchObject({ type: 'job.failed', data: { error: { code: 'JOB_FAILED' } } });
  });

  it("names the API key that asked for the callback, inside what is signed", () => {
    expect(JSON.parse(webhookBody(view, 'alice'))).toEqual({ type: 'job.completed', timestamp: view.finishedAt, caller: 'alice', data: view });
  });

  it('leaves out a result too large to sign cheaply', () => {
    const big = { ...view, result: 'x'.repeat(INLINE_BODY_MAX) };
    const body = webhookBody(big);
    expect(Buffer.byteLength(body)).toBeLessThan(1024);
    expect(JSON.parse(body)).toEqual({ type: 'job.completed', timestamp: view.finishedAt, data: { ...view, result: undefined }, resultOmitted: true });
  });
});
