import type { Telemetry } from 'bullmq';
import type { FastifyInstance } from 'fastify';
import type { Config } from '@app/config';

export type TracingConfig = Config['otel'] & { endpoint: string };

/** Injection token of the process's Tracing, or null when tracing is off. */
export const TRACING = Symbol('TRACING');

/** Span attributes this service adds (OpenTelemetry's own names where one exists). */
export const SPAN_ATTRIBUTES = {
  requestId: 'nest_offload.request_id',
  jobId: 'nest_offload.job.id',
  jobType: 'nest_offload.job.type',
  jobAttempt: 'nest_offload.job.attempt',
  jobStep: 'nest_offload.job.step',
  threadId: 'thread.id',
} as const;

export type SpanAttributeValue = string | number | boolean;

/**
 * A span that ended elsewhere (in a pool thread), handed to the main thread as plain data for
 * export. Times are epoch milliseconds with a fraction.
 */
export interface FinishedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  startMs: number;
  endMs: number;
  attributes: Record<string, SpanAttributeValue>;
  /** Set when the work failed: the span's status message. */
  error?: string;
}

/** What the apps ask of OpenTelemetry. Exists only when OTEL_EXPORTER_OTLP_ENDPOINT is set. */
export interface Tracing {
  /** BullMQ's `telemetry` option (bullmq-otel): spans for add and process, the context in the job. */
  readonly telemetry: Telemetry;
  /**
   * A server span per HTTP request (paths matching `skip` excepted), active while its handler runs,
   * continuing an incoming `traceparent`.
   */
  traceHttp(fastify: FastifyInstance, skip: RegExp): void;
  /** Adds attributes to the active span. */
  setAttributes(attributes: Record<string, SpanAttributeValue | undefined>): void;
  /** The W3C `traceparent` of the active span, when it is sampled: a pool thread's spans go under it. */
  traceparent(): string | undefined;
  /** Exports a span a pool thread finished. */
  exportSpan(span: FinishedSpan): void;
  /** Flushes what is buffered, for at most `timeoutMs`. */
  shutdown(timeoutMs?: number): Promise<void>;
}

/**
 * Tracing for `app`, or undefined when OTEL_EXPORTER_OTLP_ENDPOINT is not set. why a require here:
 * without an endpoint, no part of the OpenTelemetry SDK, its exporter or bullmq-otel is loaded, and
 * nothing on the request or job path changes.
 */
export function startTracing(config: Config, app: 'api' | 'worker', logger: TracingLogger): Tracing | undefined {
  const { endpoint } = config.otel;
  if (endpoint === undefined) return undefined;
  const { OtelTracing } = require('./otel-tracing') as typeof import('./otel-tracing');
  return new OtelTracing({ ...config.otel, endpoint }, config.otel.serviceName ?? `nest-offload-${app}`, logger);
}

/** Where failed exports are reported (the app's pino logger). */
export interface TracingLogger {
  warn(fields: object, msg: string): void;
}
