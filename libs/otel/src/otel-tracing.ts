import { randomUUID } from 'node:crypto';
import {
  type Attributes,
  type Context,
  context,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
  TraceFlags,
  type Tracer,
} from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { hrTimeDuration, millisToHrTime, setGlobalErrorHandler, W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { type Resource, resourceFromAttributes } from '@opentelemetry/resources';
import {
  BatchSpanProcessor,
  ParentBasedSampler,
  type ReadableSpan,
  type Sampler,
  SamplingDecision,
  type SpanProcessor,
  TraceIdRatioBasedSampler,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import type { Telemetry } from 'bullmq';
import { BullMQOtel } from 'bullmq-otel';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Config } from '@app/config';
import type { Logger } from '@app/logging';
import { type FinishedSpan, SPAN_ATTRIBUTES, type SpanAttributeValue, type Tracing } from '@app/tracing';

export type TracingConfig = Config['otel'] & { endpoint: string };

const SPAN = Symbol('nest-offload.span');
/** An unreachable collector fails every export: one warning per this long is enough. */
const ERROR_REPORT_MS = 60_000;
type TracedRequest = FastifyRequest & { [SPAN]?: Span };

/**
 * Traces what a request or a job starts (`ratio` of them, by trace id); drops root spans of BullMQ's
 * background loops (a blocking fetch that found nothing, the stalled-job check), which would
 * otherwise be one trace each, every few seconds. Children follow their parent's decision.
 */
class RequestsAndJobsSampler implements Sampler {
  private readonly ratio: TraceIdRatioBasedSampler;

  constructor(ratio: number) {
    this.ratio = new TraceIdRatioBasedSampler(ratio);
  }

  shouldSample(context: Context, traceId: string, _name: string, kind: SpanKind) {
    if (kind === SpanKind.INTERNAL) return { decision: SamplingDecision.NOT_RECORD };
    return this.ratio.shouldSample(context, traceId);
  }

  toString(): string {
    return `RequestsAndJobsSampler(${this.ratio.toString()})`;
  }
}

/** The attribute in which BullMQ puts a job's result on its `process` span's "job completed" event. */
const JOB_RESULT = 'bullmq.job.result';

/**
 * Takes job results off spans before they are exported. why: results may be large or private; like
 * inputs (which are never logged or traced), they stay in Redis.
 */
class DropJobResults implements SpanProcessor {
  onStart(): void {}

  onEnd(span: ReadableSpan): void {
    for (const event of span.events) if (event.attributes && JOB_RESULT in event.attributes) delete (event.attributes as Attributes)[JOB_RESULT];
  }

  forceFlush(): Promise<void> {
    return Promise.resolve();
  }

  shutdown(): Promise<void> {
    return Promise.resolve();
  }
}

/** OpenTelemetry tracing, exported over OTLP/HTTP (JSON) to `<endpoint>/v1/traces`. */
export class OtelTracing implements Tracing {
  readonly telemetry: Telemetry;
  private readonly provider: TracerProvider;
  private readonly processor: BatchSpanProcessor;
  private readonly tracer: Tracer;
  private readonly resource: Resource;

  constructor({ endpoint, headers, sampleRatio }: TracingConfig, serviceName: string, logger: Logger) {
    this.resource = resourceFromAttributes({ 'service.name': serviceName, 'service.instance.id': randomUUID() });
    const url = new URL('v1/traces', endpoint.endsWith('/') ? endpoint : `${endpoint}/`).href;
    this.processor = new BatchSpanProcessor({ exporter: new OTLPTraceExporter({ url, headers: { ...headers } }) });
    this.provider = new TracerProvider({
      resource: this.resource,
      sampler: new ParentBasedSampler({ root: new RequestsAndJobsSampler(sampleRatio) }),
      spanProcessors: [new DropJobResults(), this.processor],
    });
    let reportedAt = -Infinity;
    let suppressed = 0;
    setGlobalErrorHandler((error) => {
      if (Date.now() - reportedAt < ERROR_REPORT_MS) return void suppressed++;
      logger.warn({ context: 'Tracing', err: error, url, suppressed }, 'OpenTelemetry error (spans not exported?)');
      reportedAt = Date.now();
      suppressed = 0;
    });
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    trace.setGlobalTracerProvider(this.provider);
    this.tracer = trace.getTracer('nest-offload');
    const bullmq = new BullMQOtel({ tracerName: 'bullmq' });
    // why root(): BullMQ runs its long-lived loops (the stalled-job check) in it, so they never
    // inherit the context of the call that started them; bullmq-otel 2.0 does not provide it.
    this.telemetry = { tracer: bullmq.tracer, contextManager: Object.assign(bullmq.contextManager, { root: () => ROOT_CONTEXT }) };
  }

  traceHttp(fastify: FastifyInstance, skip: RegExp): void {
    fastify.addHook('onRequest', (request: TracedRequest, _reply, done) => {
      if (skip.test(request.url)) return done();
      const route = request.routeOptions.url;
      const path = request.url.split('?', 1)[0];
      request[SPAN] = this.tracer.startSpan(
        route ? `${request.method} ${route}` : request.method,
        {
          kind: SpanKind.SERVER,
          attributes: {
            'http.request.method': request.method,
            'url.path': path,
            ...(route ? { 'http.route': route } : {}),
            [SPAN_ATTRIBUTES.requestId]: request.id,
          },
        },
        propagation.extract(ROOT_CONTEXT, request.headers),
      );
      done();
    });
    // why preHandler: Fastify calls the route handler synchronously from its last preHandler hook,
    // so the handler, and everything it awaits (the enqueue), runs with the request's span active.
    fastify.addHook('preHandler', (request: TracedRequest, _reply, done) => {
      const span = request[SPAN];
      if (!span) return done();
      context.with(trace.setSpan(ROOT_CONTEXT, span), done);
    });
    const end = (request: TracedRequest, status?: number) => {
      const span = request[SPAN];
      if (!span) return;
      request[SPAN] = undefined;
      if (status === undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: 'client closed the request' });
      else {
        span.setAttribute('http.response.status_code', status);
        if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      }
      span.end();
    };
    fastify.addHook('onResponse', (request: TracedRequest, reply, done) => {
      end(request, reply.statusCode);
      done();
    });
    fastify.addHook('onRequestAbort', (request: TracedRequest, done) => {
      end(request);
      done();
    });
  }

  setAttributes(attributes: Record<string, SpanAttributeValue | undefined>): void {
    const span = trace.getActiveSpan();
    if (span) for (const [key, value] of Object.entries(attributes)) if (value !== undefined) span.setAttribute(key, value);
  }

  traceparent(): string | undefined {
    const span = trace.getActiveSpan()?.spanContext();
    if (!span || !(span.traceFlags & TraceFlags.SAMPLED)) return undefined;
    return `00-${span.traceId}-${span.spanId}-01`;
  }

  exportSpan(finished: FinishedSpan): void {
    const startTime = millisToHrTime(finished.startMs);
    const endTime = millisToHrTime(Math.max(finished.startMs, finished.endMs));
    const span: ReadableSpan = {
      name: finished.name,
      kind: SpanKind.INTERNAL,
      spanContext: () => ({ traceId: finished.traceId, spanId: finished.spanId, traceFlags: TraceFlags.SAMPLED }),
      parentSpanContext: { traceId: finished.traceId, spanId: finished.parentSpanId, traceFlags: TraceFlags.SAMPLED, isRemote: false },
      startTime,
      endTime,
      duration: hrTimeDuration(startTime, endTime),
      status: finished.error === undefined ? { code: SpanStatusCode.UNSET } : { code: SpanStatusCode.ERROR, message: finished.error },
      attributes: finished.attributes,
      links: [],
      events: [],
      ended: true,
      resource: this.resource,
      instrumentationScope: { name: 'nest-offload-thread' },
      droppedAttributesCount: 0,
      droppedEventsCount: 0,
      droppedLinksCount: 0,
    };
    this.processor.onEnd(span);
  }

  /** Flushes what is buffered, for at most `timeoutMs`. */
  async shutdown(timeoutMs = 2000): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      this.provider.shutdown().catch(() => undefined),
      new Promise((resolve) => (timer = setTimeout(resolve, timeoutMs))),
    ]);
    clearTimeout(timer);
  }
}
