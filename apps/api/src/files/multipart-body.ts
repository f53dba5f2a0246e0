import type { FastifyInstance } from 'fastify';
import { ApiError } from '../http/api-error';

/** The route whose multipart bodies FileIntake reads: a job submission. */
export const MULTIPART_ROUTES = new Set(['/v1/jobs/:type']);

/**
 * Lets `multipart/form-data` through unread, on the routes that stream it (FileIntake reads the
 * request itself, file by file); every other route answers it with 415, as any non-JSON body.
 */
export function registerMultipartBody(fastify: FastifyInstance): void {
  fastify.addContentTypeParser('multipart/form-data', (request, _payload, done) => {
    if (MULTIPART_ROUTES.has(request.routeOptions.url ?? '')) done(null, undefined);
    else done(new ApiError('UNSUPPORTED_MEDIA_TYPE', 'This route takes application/json'));
  });
}

/**
 * Lets `application/octet-stream` through unread on the routes declared with
 * `@RouteConfig({ streamsBody: true })`, which read the request themselves (an upload's bytes);
 * every other route answers it with 415, as any non-JSON body.
 */
export function registerStreamedBody(fastify: FastifyInstance): void {
  fastify.addContentTypeParser('application/octet-stream', (request, _payload, done) => {
    if ((request.routeOptions.config as { streamsBody?: boolean } | undefined)?.streamsBody) done(null, undefined);
    else done(new ApiError('UNSUPPORTED_MEDIA_TYPE', 'This route takes application/json'));
  });
}

/** Whether a request carries a multipart/form-data body. */
export const isMultipart = (contentType: string | undefined): boolean => /^multipart\/form-data\s*(;|$)/i.test(contentType ?? '');
