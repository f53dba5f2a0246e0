export { ConfigError, loadConfig } from './config';
export type { Config } from './config';
export { CONFIG, ConfigModule } from './config.module';
