import { type DynamicModule, Global, Inject, Module, type OnApplicationShutdown } from '@nestjs/common';
import { CONFIG, type Config } from '@app/config';
import { LOGGER, type Logger } from '@app/logging';
import { TRACING_IMPLEMENTATION } from '@app/tracing';
import type { OtelTracing } from './otel-tracing';

/**
 * OpenTelemetry tracing for `app`, or undefined when OTEL_EXPORTER_OTLP_ENDPOINT is not set. why a
 * require here: without an endpoint, no part of the OpenTelemetry SDK, its exporter or bullmq-otel
 * is loaded, and nothing on the request or job path changes.
 */
function startTracing(config: Config, app: 'api' | 'worker', logger: Logger): OtelTracing | undefined {
  const { endpoint } = config.otel;
  if (endpoint === undefined) return undefined;
  const { OtelTracing } = require('./otel-tracing') as typeof import('./otel-tracing');
  return new OtelTracing({ ...config.otel, endpoint }, config.otel.serviceName ?? `nest-offload-${app}`, logger);
}

/**
 * Tracing with OpenTelemetry, on when OTEL_EXPORTER_OTLP_ENDPOINT is set: lends the core's
 * TracingModule its Tracing, and flushes the buffered spans when the app closes. why global: the
 * core's TracingModule injects TRACING_IMPLEMENTATION as optional, so without this module (or its
 * folder) tracing is simply off.
 */
@Global()
@Module({})
export class OtelTracingModule implements OnApplicationShutdown {
  static forRoot(app: 'api' | 'worker'): DynamicModule {
    return {
      module: OtelTracingModule,
      providers: [{ provide: TRACING_IMPLEMENTATION, inject: [CONFIG, LOGGER], useFactory: (config: Config, logger: Logger) => startTracing(config, app, logger) }],
      exports: [TRACING_IMPLEMENTATION],
    };
  }

  constructor(@Inject(TRACING_IMPLEMENTATION) private readonly tracing: OtelTracing | undefined) {}

  /** Flushes the buffered spans. why here: Nest calls it once the HTTP server has closed (every request's span has ended); the worker drains its jobs before that. */
  async onApplicationShutdown(): Promise<void> {
    await this.tracing?.shutdown();
  }
}
