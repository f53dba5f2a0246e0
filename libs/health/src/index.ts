export { HealthController } from './health.controller';
export { HEALTH_INDICATORS } from './health.indicator';
export type { HealthIndicator } from './health.indicator';
export { Lifecycle } from './lifecycle';
