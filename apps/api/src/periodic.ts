/**
 * A task each replica runs on a timer (the sweeps): never two at once, a tick that comes while one
 * runs is skipped (the next run does what it would have done); `stop` ends the timer, aborts the
 * running one's signal and waits for it, so none is left at work on connections being closed.
 * why skipped, not queued: a task slower than its interval (on a frozen Redis, over a large S3
 * listing) would pile the ticks up, and the shutdown would wait for all of them.
 */
export class Periodic {
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;
  private readonly stopping = new AbortController();

  constructor(
    private readonly everyMs: number,
    private readonly task: (signal: AbortSignal) => Promise<unknown>,
    private readonly onError: (error: unknown) => void,
  ) {}

  start(): void {
    this.timer = setInterval(() => {
      if (this.running) return;
      this.running = (async () => {
        try {
          await this.task(this.stopping.signal);
        } catch (error) {
          this.onError(error);
        } finally {
          this.running = undefined;
        }
      })();
    }, this.everyMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.stopping.abort();
    await this.running;
  }
}
