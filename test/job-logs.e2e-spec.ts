import { randomBytes } from 'node:crypto';
import { AppProcess, LogLine, stackEnv, startApp } from './support/apps';
import { submit } from './support/http';
import { waitFor } from './support/wait';

const JOB_LINE = 'chaos: a log line from the job';
/** The thread's rate limit (apps/worker/src/pool/thread-log.ts): a burst, then a rate per second. */
const BURST = 50;
const PER_SECOND = 10;

/** `ctx.log` in a job's `run`: its lines reach the worker's log with the job's fields, rate-limited. */
describe('job logs from inside the thread', () => {
  const apps: AppProcess[] = [];
  let api: AppProcess;
  let worker: AppProcess;

  beforeAll(async () => {
    const env = stackEnv('job-logs');
    apps.push((api = await startApp('api', env)));
    apps.push((worker = await startApp('worker', env)));
  });
  afterAll(() => Promise.all(apps.map((app) => app.stop())));

  const linesOf = (jobId: string) => worker.logs.filter((l) => l.jobId === jobId && l.context === 'job');

  it("writes the job's lines with its job id, request id, type, attempt and thread id", async () => {
    const requestId = `job-logs-${randomBytes(4).toString('hex')}`;
    const res = await submit(api.url, 'chaos', { mode: 'ok', lines: 2, tag: 'hello' }, { wait: 15, headers: { 'x-request-id': requestId } });
    expect(res.body).toMatchObject({ status: 'completed' });
    const lines = await waitFor(() => (linesOf(res.body.id).length === 2 ? linesOf(res.body.id) : undefined), { what: 'the job’s two log lines' });
    for (const [i, line] of lines.entries()) {
      expect(line).toMatchObject({ msg: JOB_LINE, level: 30, requestId, type: 'chaos', attempt: 1, line: i + 1, tag: 'hello', name: 'worker' });
      expect(line.threadId).toBeGreaterThan(0);
    }
  });

  it('rate-limits a chatty job and says how many lines it dropped', async () => {
    const lines = 20_000;
    const res = await submit(api.url, 'chaos', { mode: 'ok', lines, tag: 'chatty' }, { wait: 30 });
    expect(res.body).toMatchObject({ status: 'completed' });
    const dropLine = await waitFor(() => linesOf(res.body.id).find((l) => typeof l.dropped === 'number'), { what: 'the dropped-lines count' });
    const written = linesOf(res.body.id).filter((l) => l.msg === JOB_LINE);
    const runSeconds = (Date.parse(res.body.finishedAt) - Date.parse(res.body.startedAt)) / 1000;
    expect(written.length).toBeGreaterThanOrEqual(BURST);
    expect(written.length).toBeLessThanOrEqual(BURST + Math.ceil(runSeconds * PER_SECOND) + 1);
    expect(dropLine).toMatchObject({ level: 40, type: 'chaos' });
    expect(written.length + (dropLine as LogLine & { dropped: number }).dropped).toBe(lines);
    expect(await worker.metric('nest_offload_job_log_lines_dropped_total')).toBe(lines - written.length);
  });
});
