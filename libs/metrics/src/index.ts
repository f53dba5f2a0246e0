export { BoundCounter, BoundHistogram } from './bound-metrics';
export type { BoundObserver, BoundSeries } from './bound-metrics';
export { registerHttpMetrics, UNMATCHED_ROUTE } from './http.metrics';
export { LoopMonitor } from './loop-monitor';
export type { LoopDelay } from './loop-monitor';
export { METRIC_PREFIX, METRICS } from './metric-names';
export type { MetricName } from './metric-names';
export { MetricsController, MetricsModule } from './metrics.module';
export { registerRedisMetrics } from './redis.metrics';
