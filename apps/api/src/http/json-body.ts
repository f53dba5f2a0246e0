import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ApiError } from './api-error';

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * The API accepts JSON bodies only (anything else is a 415): strict UTF-8, and bodies that try to set
 * `__proto__` or `constructor.prototype` are rejected rather than silently cleaned.
 */
export function registerJsonBody(fastify: FastifyInstance, bodyLimit: number): void {
  fastify.removeAllContentTypeParsers();
  const parseJson = fastify.getDefaultJsonParser('error', 'error');
  const parser = (request: FastifyRequest, body: string | Buffer, done: (err: Error | null, body?: unknown) => void) => {
    let text: string;
    try {
      text = utf8.decode(body as Buffer);
    } catch {
      done(new ApiError('MALFORMED_REQUEST', 'Body is not valid UTF-8'));
      return;
    }
    parseJson(request, text, done);
  };
  fastify.addContentTypeParser('application/json', { parseAs: 'buffer', bodyLimit }, parser);
  fastify.addContentTypeParser(/^application\/[\w.-]+\+json$/, { parseAs: 'buffer', bodyLimit }, parser);
}
