import { LOG_BURST, LOG_LEVELS, LOG_PER_SECOND, TaskLog } from './thread-log';
import type { LogMessage } from './thread-protocol';

function taskLog(minLevel: number = LOG_LEVELS.info) {
  let now = 1_000_000;
  const sent: LogMessage[] = [];
  const log = new TaskLog(7, 3, minLevel, (m) => sent.push(m), () => now);
  return { log, sent, advance: (ms: number) => (now += ms) };
}

const lines = (sent: LogMessage[]) => sent.filter((m) => 'msg' in m);
const drops = (sent: LogMessage[]) => sent.flatMap((m) => ('dropped' in m ? [m.dropped] : []));

describe('TaskLog (a job run’s ctx.log)', () => {
  it('sends pino-style lines with their fields as JSON, tagged with the task and thread', () => {
    const { log, sent } = taskLog();
    log.logger.info('plain');
    log.logger.warn({ rows: 3, err: new Error('boom'), big: 10n }, 'with fields');
    expect(sent[0]).toEqual({ taskId: 7, threadId: 3, level: 30, msg: 'plain' });
    expect(sent[1]).toMatchObject({ level: 40, msg: 'with fields' });
    const fields = JSON.parse((sent[1] as { fieldsJson: string }).fieldsJson);
    expect(fields).toMatchObject({ rows: 3, big: '10', err: { type: 'Error', message: 'boom' } });
    expect(log.posted).toBe(2);
  });

  it('sends nothing below the log level', () => {
    const { log, sent } = taskLog(LOG_LEVELS.info);
    log.logger.debug('hidden');
    log.logger.trace({ a: 1 }, 'hidden');
    log.finish();
    expect(sent).toEqual([]);
  });

  it('lets a burst through, then a steady rate, and counts what it drops', () => {
    const { log, sent, advance } = taskLog();
    for (let i = 0; i < 1000; i++) log.logger.info(`line ${i}`);
    expect(lines(sent)).toHaveLength(LOG_BURST);
    advance(1000);
    for (let i = 0; i < 1000; i++) log.logger.info(`line ${i}`);
    expect(lines(sent)).toHaveLength(LOG_BURST + LOG_PER_SECOND);
    log.finish();
    expect(drops(sent)).toEqual([2000 - LOG_BURST - LOG_PER_SECOND]);
    expect(log.posted).toBe(sent.length);
  });

  it('reports drops while a flood lasts, not only at its end', () => {
    const { log, sent, advance } = taskLog();
    for (let s = 0; s < 25; s++) {
      for (let i = 0; i < 100; i++) log.logger.info('flood');
      advance(1000);
    }
    expect(drops(sent).length).toBeGreaterThanOrEqual(2);
    log.finish();
    const sentLines = lines(sent).length;
    expect(sentLines + drops(sent).reduce((a, b) => a + b, 0)).toBe(2500);
  });

  it('bounds what one line may carry', () => {
    const { log, sent } = taskLog();
    log.logger.info({ blob: 'x'.repeat(100_000) }, 'y'.repeat(10_000));
    const [line] = sent as Array<{ msg: string; fieldsJson: string }>;
    expect(line.msg.length).toBeLessThan(2100);
    expect(JSON.parse(line.fieldsJson)).toEqual({ logFieldsTruncated: expect.stringMatching(/characters/) });
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    log.logger.info(circular, 'circular');
    expect(JSON.parse((sent[1] as { fieldsJson: string }).fieldsJson)).toEqual({ logFields: 'not serializable' });
  });
});
