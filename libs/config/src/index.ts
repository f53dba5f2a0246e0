export { canonicalAddress, ipv6Groups } from './cidr';
export type { Cidr } from './cidr';
export { ConfigError, loadConfig } from './config';
export type { Config, WebhookConfig, WebhookHost } from './config';
export { blobTargetOf, describeBlobTarget } from './blob-target';
export type { BlobTarget } from './blob-target';
export type { RedisHost, RedisTarget } from './redis-target';
export { CONFIG, ConfigModule } from './config.module';
