import type { Telemetry } from 'bullmq';
import type { FastifyInstance } from 'fastify';

/** Injection token of the process's Tracing, or null when tracing is off (TracingModule provides it). */
export const TRACING = Symbol('TRACING');

/**
 * Injection token under which the tracing capability (libs/otel) lends its Tracing, when on. why a
 * second token: TracingModule always provides TRACING, null without the capability, so deleting its
 * folder leaves every injection of TRACING whole.
 */
export const TRACING_IMPLEMENTATION = Symbol('TRACING_IMPLEMENTATION');

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

/**
 * What the apps ask of tracing. The core owns this interface; the OpenTelemetry capability
 * (libs/otel) implements it, and flushes its spans itself when the app closes.
 */
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
}
