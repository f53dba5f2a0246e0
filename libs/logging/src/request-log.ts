import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';

/** Probes and metrics scrapes: no request log line, no trace. */
export const QUIET_PATHS = /^\/(health\/|metrics$)/;

/**
 * One log line per HTTP request, when it is answered: request id, method, URL, status and time.
 * Probes and metrics scrapes are left out. Headers and bodies are never logged.
 */
export function registerRequestLog(fastify: FastifyInstance, logger: Logger): void {
  fastify.addHook('onResponse', (request, reply, done) => {
    if (logger.isLevelEnabled('info') && !QUIET_PATHS.test(request.url)) {
      logger.info(
        {
          req: { id: request.id, method: request.method, url: request.url },
          res: { statusCode: reply.statusCode },
          responseTime: Math.round(reply.elapsedTime * 100) / 100,
        },
        'request completed',
      );
    }
    done();
  });
}
