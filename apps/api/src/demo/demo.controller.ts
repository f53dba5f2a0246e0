import { Controller, Get, Header } from '@nestjs/common';
import { DEMO_CSP, DEMO_PAGE } from './demo.page';
import { LoopDelay, LoopMonitor } from './loop-monitor';

/**
 * GET /demo: a page that plots, live, this API's ping latency and event-loop delay next to a
 * baseline server's (`?baseline=http://host:port`, e.g. the bench's in-handler server).
 */
@Controller('demo')
export class DemoController {
  constructor(private readonly loop: LoopMonitor) {}

  @Get()
  @Header('content-type', 'text/html; charset=utf-8')
  @Header('cache-control', 'no-store')
  @Header('content-security-policy', DEMO_CSP)
  page(): string {
    return DEMO_PAGE;
  }

  /** The cheapest possible route: its latency is the event loop's responsiveness as a client sees it. */
  @Get('ping')
  @Header('cache-control', 'no-store')
  ping(): { ok: true; at: number } {
    return { ok: true, at: Date.now() };
  }

  @Get('loop')
  @Header('cache-control', 'no-store')
  loopDelay(): LoopDelay {
    return this.loop.latest();
  }
}
