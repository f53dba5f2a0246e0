export { METRIC_PREFIX } from './metric-prefix';
export { MetricsController, MetricsModule } from './metrics.module';
