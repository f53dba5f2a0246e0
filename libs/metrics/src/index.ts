export { MetricsController, MetricsModule } from './metrics.module';
