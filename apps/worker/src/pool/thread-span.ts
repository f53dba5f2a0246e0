import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { FinishedSpan, SpanAttributeValue } from '@app/tracing';

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$/;

/** Epoch ms with sub-ms precision, on the same scale in every thread. */
export function nowMs(): number {
  return performance.timeOrigin + performance.now();
}

/**
 * Starts a span under `traceparent` as plain data, so a pool thread can time its work without
 * loading OpenTelemetry; the main thread exports it (see Tracing.exportSpan).
 */
export function startSpan(traceparent: string, name: string, attributes: Record<string, SpanAttributeValue>, startMs = nowMs()) {
  const parent = TRACEPARENT.exec(traceparent);
  if (!parent) return undefined;
  const spanId = randomBytes(8).toString('hex');
  return {
    end: (error?: string): FinishedSpan => ({
      traceId: parent[1],
      spanId,
      parentSpanId: parent[2],
      name,
      startMs,
      endMs: nowMs(),
      attributes,
      ...(error === undefined ? {} : { error }),
    }),
  };
}
