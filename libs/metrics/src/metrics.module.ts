import { Controller, Get, Global, Header, Module } from '@nestjs/common';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { METRIC_PREFIX } from './metric-names';

/** Prometheus metrics of one process at GET /metrics: Node's defaults (event-loop lag, heap, GC) and the app's own. */
@Controller('metrics')
export class MetricsController {
  constructor(private readonly registry: Registry) {}

  @Get()
  @Header('content-type', 'text/plain; version=0.0.4; charset=utf-8')
  @Header('cache-control', 'no-store')
  metrics(): Promise<string> {
    return this.registry.metrics();
  }
}

@Global()
@Module({
  controllers: [MetricsController],
  providers: [
    {
      provide: Registry,
      useFactory: () => {
        const registry = new Registry();
        collectDefaultMetrics({ register: registry, prefix: METRIC_PREFIX });
        return registry;
      },
    },
  ],
  exports: [Registry],
})
export class MetricsModule {}
