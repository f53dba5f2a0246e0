import { ELDHistogram, monitorEventLoopDelay } from 'node:perf_hooks';

/** Event-loop delay over one window: how late a 10 ms timer fired, beyond its 10 ms. */
export interface LoopDelay {
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** Length of the window the figures cover. */
  windowMs: number;
  samples: number;
}

const RESOLUTION_MS = 10;
const WINDOW_MS = 1000;
const ms = (ns: number) => Math.max(0, ns / 1e6 - RESOLUTION_MS);

/**
 * Watches this process's event loop with `perf_hooks.monitorEventLoopDelay` and keeps the figures of
 * the last completed ~1 s window, for the /demo page's probes (the demo's and the bench baselines').
 * No Nest inside; Nest calls `onModuleInit`/`onModuleDestroy` when it is a provider.
 */
export class LoopMonitor {
  private histogram?: ELDHistogram;
  private timer?: NodeJS.Timeout;
  private windowStart = 0;
  private last: LoopDelay = { p50Ms: 0, p99Ms: 0, maxMs: 0, windowMs: 0, samples: 0 };

  onModuleInit(): void {
    this.start();
  }

  onModuleDestroy(): void {
    this.stop();
  }

  start(): this {
    if (this.histogram) return this;
    this.histogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
    this.histogram.enable();
    this.windowStart = performance.now();
    // why: unref'd, so the monitor never keeps a process alive that is otherwise done.
    this.timer = setInterval(() => this.rotate(), WINDOW_MS).unref();
    return this;
  }

  stop(): void {
    clearInterval(this.timer);
    this.histogram?.disable();
    this.histogram = undefined;
  }

  /** The last completed window; while the loop is blocked, the window in progress once it turns again. */
  latest(): LoopDelay {
    // why: a loop blocked past the window's end serves this request before the rotation timer runs;
    // the block is then in the current window, which is the one worth showing.
    if (this.histogram && performance.now() - this.windowStart > 2 * WINDOW_MS) return this.current();
    return this.last;
  }

  private current(): LoopDelay {
    const h = this.histogram!;
    if (h.count === 0) return { p50Ms: 0, p99Ms: 0, maxMs: 0, windowMs: performance.now() - this.windowStart, samples: 0 };
    return {
      p50Ms: ms(h.percentile(50)),
      p99Ms: ms(h.percentile(99)),
      maxMs: ms(h.max),
      windowMs: performance.now() - this.windowStart,
      samples: h.count,
    };
  }

  private rotate(): void {
    if (!this.histogram) return;
    this.last = this.current();
    this.histogram.reset();
    this.windowStart = performance.now();
  }
}
