import { Controller, Get, Header } from '@nestjs/common';
import { ApiOperation, ApiResponse, ApiTags } from '../http/openapi.recorder';
import { type LoopDelay, LoopMonitor } from '@app/metrics';
import { DEMO_CSP, DEMO_PAGE } from './demo.page';

/**
 * GET /demo: a page that plots, live, this API's ping latency and event-loop delay next to a
 * baseline server's (`?baseline=http://host:port`, e.g. the bench's in-handler server).
 */
@ApiTags('demo')
@Controller('demo')
export class DemoController {
  constructor(private readonly loop: LoopMonitor) {}

  @Get()
  @ApiOperation({ summary: 'The live demo page (DEMO=true only)', description: '`?baseline=http://host:port` adds a baseline server’s panel.' })
  @ApiResponse({ status: 200, description: 'HTML.', content: { 'text/html': { schema: { type: 'string' } } } })
  @Header('content-type', 'text/html; charset=utf-8')
  @Header('cache-control', 'no-store')
  @Header('content-security-policy', DEMO_CSP)
  page(): string {
    return DEMO_PAGE;
  }

  /** The cheapest possible route: its latency is the event loop's responsiveness as a client sees it. */
  @Get('ping')
  @ApiOperation({ summary: 'The cheapest route: its latency is the event loop’s responsiveness' })
  @ApiResponse({
    status: 200,
    description: 'Pong.',
    content: { 'application/json': { schema: { type: 'object', required: ['ok', 'at'], properties: { ok: { type: 'boolean', enum: [true] }, at: { type: 'integer' } } } } },
  })
  @Header('cache-control', 'no-store')
  ping(): { ok: true; at: number } {
    return { ok: true, at: Date.now() };
  }

  @Get('loop')
  @ApiOperation({ summary: 'This API’s event-loop delay over the last second' })
  @ApiResponse({
    status: 200,
    description: 'Percentiles in ms.',
    content: {
      'application/json': {
        schema: {
          type: 'object',
          required: ['p50Ms', 'p99Ms', 'maxMs', 'windowMs', 'samples'],
          properties: { p50Ms: { type: 'number' }, p99Ms: { type: 'number' }, maxMs: { type: 'number' }, windowMs: { type: 'number' }, samples: { type: 'integer' } },
        },
      },
    },
  })
  @Header('cache-control', 'no-store')
  loopDelay(): LoopDelay {
    return this.loop.latest();
  }
}
