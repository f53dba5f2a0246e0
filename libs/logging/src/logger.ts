import pino, { type Logger } from 'pino';
import type PinoPretty from 'pino-pretty';
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

type LogConfig = Pick<Config, 'logLevel' | 'logFormat' | 'env'>;

/** LOG_FORMAT=auto: readable lines for a person at a terminal, JSON for machines and production. */
export function logFormat(config: Pick<Config, 'logFormat' | 'env'>, isTTY = process.stdout.isTTY === true): 'json' | 'pretty' {
  if (config.logFormat !== 'auto') return config.logFormat;
  return isTTY && config.env !== 'production' ? 'pretty' : 'json';
}

/**
 * The process's one pino logger, `name` saying which app wrote its lines: JSON lines on stdout, or
 * pino-pretty's lines (see logFormat).
 * why chosen once, here: JSON logging stays pino's own path, with no check or stream per line.
 */
export function createLogger(config: LogConfig, name: 'api' | 'worker'): Logger {
  const options = { name, level: config.logLevel, redact: { paths: REDACTED_PATHS, censor: '[redacted]' } };
  if (logFormat(config) === 'json') return pino(options);
  const pretty = loadPretty();
  if (pretty) {
    // why sync: a line logged just before the process exits (a fatal start-up error) is still printed.
    const lines = pretty({
      sync: true,
      translateTime: 'SYS:HH:MM:ss.l',
      ignore: 'pid,hostname,context',
      messageFormat: '{if context}{context}: {end}{msg}',
    });
    return pino(options, lines);
  }
  const logger = pino(options);
  logger.warn('LOG_FORMAT: pino-pretty is not installed (a dev dependency, left out of production installs); logging JSON lines');
  return logger;
}

function loadPretty(): typeof PinoPretty | undefined {
  try {
    // why require, not an import: production installs leave dev dependencies out, and JSON logging never needs it.
    return require('pino-pretty') as typeof PinoPretty;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'MODULE_NOT_FOUND') return undefined;
    throw error;
  }
}

export type { Logger };
