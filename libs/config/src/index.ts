export { ConfigError, loadConfig } from './config';
export type { Config, WebhookConfig, WebhookHost } from './config';
export { CONFIG, ConfigModule } from './config.module';
