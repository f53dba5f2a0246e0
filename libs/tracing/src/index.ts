export { SPAN_ATTRIBUTES, startTracing, TRACING } from './tracing';
export type { FinishedSpan, SpanAttributeValue, Tracing, TracingLogger } from './tracing';
export { TracingModule } from './tracing.module';
