import type { JobLogFn, JobLogger } from '@app/jobs';
import type { LogMessage } from './thread-protocol';

/** Lines a run may write at once, and per second after that (see JobContext.log). */
export const LOG_BURST = 50;
export const LOG_PER_SECOND = 10;
/** While lines are being dropped, their count is reported at most this often (and when the run ends). */
const DROP_REPORT_MS = 10_000;
const MAX_MSG_CHARS = 2048;
const MAX_FIELDS_CHARS = 8192;

/** pino's level values. */
export const LOG_LEVELS = { trace: 10, debug: 20, info: 30, warn: 40, error: 50 } as const;
export type LogLevelName = keyof typeof LOG_LEVELS;

/**
 * One run's `ctx.log`. Lines go to the main thread as messages, which writes them through its pino
 * logger with the job's fields. A token bucket per run keeps a chatty job from flooding the channel
 * and stdout: past it, lines are counted, not sent, and the count is sent instead.
 */
export class TaskLog {
  /** Messages sent so far: the main thread waits for this many before it forgets the task. */
  posted = 0;
  readonly logger: JobLogger;
  private tokens = LOG_BURST;
  private refilledAt: number;
  private dropped = 0;
  private reportedAt: number;

  constructor(
    private readonly taskId: number,
    private readonly threadId: number,
    private readonly minLevel: number,
    private readonly post: (message: LogMessage) => void,
    private readonly now: () => number = Date.now,
  ) {
    this.refilledAt = this.reportedAt = now();
    const at = (level: number): JobLogFn => ((a: unknown, b?: string) => this.write(level, a, b)) as JobLogFn;
    this.logger = Object.freeze({
      trace: at(LOG_LEVELS.trace),
      debug: at(LOG_LEVELS.debug),
      info: at(LOG_LEVELS.info),
      warn: at(LOG_LEVELS.warn),
      error: at(LOG_LEVELS.error),
    });
  }

  /** Sends the count of lines dropped since the last report, if any. Call when the run ends. */
  finish(): void {
    if (this.dropped > 0) this.reportDrops(this.now());
  }

  private write(level: number, a: unknown, b: string | undefined): void {
    if (level < this.minLevel) return;
    const now = this.now();
    this.tokens = Math.min(LOG_BURST, this.tokens + ((now - this.refilledAt) / 1000) * LOG_PER_SECOND);
    this.refilledAt = now;
    if (this.tokens < 1) {
      this.dropped++;
      if (now - this.reportedAt >= DROP_REPORT_MS) this.reportDrops(now);
      return;
    }
    this.tokens--;
    const withFields = typeof a === 'object' && a !== null;
    const msg = String((withFields ? b : a) ?? '');
    this.send({
      taskId: this.taskId,
      threadId: this.threadId,
      level,
      msg: msg.length > MAX_MSG_CHARS ? `${msg.slice(0, MAX_MSG_CHARS)}…` : msg,
      ...(withFields ? { fieldsJson: fieldsJson(a) } : {}),
    });
  }

  private reportDrops(now: number): void {
    this.send({ taskId: this.taskId, threadId: this.threadId, dropped: this.dropped });
    this.dropped = 0;
    this.reportedAt = now;
  }

  private send(message: LogMessage): void {
    this.post(message);
    this.posted++;
  }
}

/** A line's fields as JSON, bounded; Errors keep their type, message and stack, BigInts become strings. */
function fieldsJson(fields: object): string {
  let json: string;
  try {
    json = JSON.stringify(fields, (_key, value: unknown) => {
      if (value instanceof Error) return { type: value.name, message: value.message, stack: value.stack };
      return typeof value === 'bigint' ? value.toString() : value;
    });
  } catch {
    return '{"logFields":"not serializable"}';
  }
  return json.length > MAX_FIELDS_CHARS ? JSON.stringify({ logFieldsTruncated: `${json.length} characters` }) : json;
}
