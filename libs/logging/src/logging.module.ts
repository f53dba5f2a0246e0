import type { IncomingMessage } from 'node:http';
import { DynamicModule, RequestMethod } from '@nestjs/common';
import { LoggerModule } from 'nestjs-pino';
import type { Config } from '@app/config';
import { requestIdFrom } from './request-id';

/** Never logged, wherever they appear. Job inputs are not logged at all (they may hold secrets). */
export const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'req.headers.cookie',
  'password',
  '*.password',
  'redisUrl',
  'cacheRedisUrl',
  '*.redisUrl',
  '*.cacheRedisUrl',
];

const QUIET_PATHS = /^\/(health\/|metrics$)/;

/** Structured pino logs for one app, one line per HTTP request with its request id. */
export function loggingModule(config: Config, name: 'api' | 'worker'): DynamicModule {
  return LoggerModule.forRoot({
    // why: nestjs-pino's default route pattern `{/*splat}` matches nothing on Nest 12's Fastify
    // adapter (no request was ever logged); `*splat` matches every path.
    forRoutes: [{ path: '*splat', method: RequestMethod.ALL }],
    pinoHttp: {
      name,
      level: config.logLevel,
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      // Fastify assigns req.id first (see requestIdFrom in main.ts); this covers any other adapter.
      genReqId: (req: IncomingMessage) => requestIdFrom(req.headers['x-request-id']),
      // why: Fastify's middleware layer strips the matched path from req.url; originalUrl keeps it.
      autoLogging: { ignore: (req: IncomingMessage & { originalUrl?: string }) => QUIET_PATHS.test(req.originalUrl ?? req.url ?? '') },
      serializers: {
        req: (req: { id: string; method: string; url: string }) => ({ id: req.id, method: req.method, url: req.url }),
        res: (res: { statusCode: number }) => ({ statusCode: res.statusCode }),
      },
    },
  });
}
