import { ArgumentsHost, Catch, ExceptionFilter, Logger } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { sendProblem } from './problem.reply';

/** The one place errors become HTTP responses: application/problem+json, no stack traces. */
@Catch()
export class ProblemFilter implements ExceptionFilter {
  private readonly logger = new Logger('Problem');

  catch(error: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const reply = http.getResponse<FastifyReply>();
    if (reply.sent || reply.raw.headersSent) {
      reply.raw.end();
      return;
    }
    const problem = sendProblem(error, http.getRequest<FastifyRequest>(), reply);
    if (problem.unexpected) this.logger.error(error instanceof Error ? error.stack : String(error));
  }
}
