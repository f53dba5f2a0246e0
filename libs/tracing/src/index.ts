export { SPAN_ATTRIBUTES, TRACING, TRACING_IMPLEMENTATION } from './tracing';
export type { FinishedSpan, SpanAttributeValue, Tracing } from './tracing';
export { TracingModule } from './tracing.module';
