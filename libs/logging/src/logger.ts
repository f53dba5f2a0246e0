import pino, { type Logger } from 'pino';
import type { Config } from '@app/config';

/** Never logged, wherever they appear. Job inputs are not logged at all (they may hold secrets). */
export const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'req.headers.cookie',
  'password',
  '*.password',
  'queueRedis.url',
  'cacheRedis.url',
  '*.queueRedis.url',
  '*.cacheRedis.url',
  'queueRedis.password',
  'cacheRedis.password',
  '*.queueRedis.password',
  '*.cacheRedis.password',
  'otel.headers',
  'webhooks.secret',
  '*.webhooks.secret',
];

/** The process's one pino logger: JSON lines on stdout, `name` saying which app wrote them. */
export function createLogger(config: Pick<Config, 'logLevel'>, name: 'api' | 'worker'): Logger {
  return pino({ name, level: config.logLevel, redact: { paths: REDACTED_PATHS, censor: '[redacted]' } });
}

export type { Logger };
