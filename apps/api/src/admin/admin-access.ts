import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import type { Config } from '@app/config';
import { ApiError } from '../http/api-error';
import { sendProblem } from '../http/problem.reply';
import { ApiKeys } from '../security/api-keys';
import { AdminSessions, cookieValue, SESSION_COOKIE, SESSION_TTL_SECONDS } from './admin-session';
import { loginPage } from './login.page';

/** The pages people open in a browser: the API docs and the queue dashboard. */
const BROWSER_PATHS = /^\/(docs($|[/?-])|admin\/)/;
const LOGIN_PATHS = new Set(['/admin/login', '/admin/logout']);
/** Where a successful sign-in may send the browser back to. */
const NEXT_PATHS = /^\/(docs|admin\/queues)([/?#][^\\\s]*)?$/;
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * These pages run their own scripts and styles (the API's own policy, `default-src 'none'`, would
 * blank them): scripts only from this origin, inline styles (both UIs set them), no framing.
 */
export const PAGE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/**
 * Guards /docs* and /admin/* (registered by other plugins, whatever they are) with the API keys when
 * API_KEYS is set: the key in `Authorization: Bearer` or `x-api-key` (curl, a proxy that injects it),
 * or the cookie that signing in at /admin/login sets (a browser). Must run before those routes are
 * registered: it attaches itself to each one as it is added.
 */
export function registerAdminAccess(fastify: FastifyInstance, config: Config): void {
  const keys = new ApiKeys(config.apiKeys);
  const sessions = new AdminSessions(config.apiKeys);
  const secure = config.env === 'production' ? '; Secure' : '';
  const defaultNext = config.apiDocs ? '/docs' : '/admin/queues';

  const pageHeaders: onRequestAsyncHookHandler = async (_request, reply) => {
    void reply.header('content-security-policy', PAGE_CSP);
  };
  const guard: onRequestAsyncHookHandler = async (request, reply) => {
    const byHeader = keys.identify(request.headers);
    const bySession = byHeader ? undefined : sessions.verify(cookieValue(request.headers.cookie, SESSION_COOKIE));
    if (!byHeader && !bySession) return deny(request, reply);
    // why: a cookie rides along on cross-site requests; SameSite=Strict stops that in today's
    // browsers, and this stops a cross-site form or fetch from changing anything in older ones.
    if (bySession && !SAFE_METHODS.has(request.method) && crossSite(request)) {
      sendProblem(new ApiError('FORBIDDEN', 'Cross-site requests may not change anything here'), request, reply);
      return reply;
    }
  };
  const deny = (request: FastifyRequest, reply: FastifyReply) => {
    if (request.method === 'GET' && /\btext\/html\b/.test(request.headers.accept ?? '')) {
      return reply.status(401).type('text/html; charset=utf-8').header('cache-control', 'no-store').send(loginPage({ next: request.url }));
    }
    sendProblem(
      new ApiError('UNAUTHORIZED', 'A valid API key is required (Authorization: Bearer <key>, x-api-key, or sign in at /admin/login)', {
        headers: { 'www-authenticate': 'Bearer realm="nest-offload"' },
      }),
      request,
      reply,
    );
    return reply;
  };

  fastify.addHook('onRoute', (route) => {
    if (!BROWSER_PATHS.test(route.url)) return;
    const hooks = [route.onRequest ?? []].flat();
    route.onRequest = [pageHeaders, ...(keys.enabled && !LOGIN_PATHS.has(route.url) ? [guard] : []), ...hooks];
  });
  // Nothing to sign in to without keys, or without a page to show.
  if (!keys.enabled || (!config.apiDocs && !config.queueDashboard)) return;

  void fastify.register(async (scope) => {
    scope.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: 4096 }, (_request, body, done) =>
      done(null, Object.fromEntries(new URLSearchParams(body as string))),
    );
    const nextOf = (value: unknown) => (typeof value === 'string' && NEXT_PATHS.test(value) && !value.startsWith('//') ? value : defaultNext);
    const page = (reply: FastifyReply, status: number, html: string) =>
      reply.status(status).type('text/html; charset=utf-8').header('cache-control', 'no-store').send(html);

    scope.get('/admin/login', async (request, reply) => {
      const signedInAs = sessions.verify(cookieValue(request.headers.cookie, SESSION_COOKIE));
      return page(reply, 200, loginPage({ next: nextOf((request.query as { next?: unknown }).next), signedInAs }));
    });
    scope.post('/admin/login', async (request, reply) => {
      if (crossSite(request)) {
        sendProblem(new ApiError('FORBIDDEN', 'Sign in from this site’s own page'), request, reply);
        return reply;
      }
      const form = (request.body ?? {}) as { key?: unknown; next?: unknown };
      const name = typeof form.key === 'string' ? keys.identify({ 'x-api-key': form.key }) : undefined;
      const next = nextOf(form.next);
      if (!name) return page(reply, 401, loginPage({ next, error: 'That is not one of the API keys.' }));
      const cookie = `${SESSION_COOKIE}=${sessions.issue(name)}; Path=/; Max-Age=${SESSION_TTL_SECONDS}; HttpOnly; SameSite=Strict${secure}`;
      return reply.status(303).header('set-cookie', cookie).header('location', next).header('cache-control', 'no-store').send();
    });
    scope.post('/admin/logout', async (_request, reply) => {
      const cookie = `${SESSION_COOKIE}=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict${secure}`;
      return reply.status(303).header('set-cookie', cookie).header('location', '/admin/login').send();
    });
  });
}

/** True when the browser says the request comes from another site (Fetch Metadata; absent outside browsers). */
function crossSite(request: FastifyRequest): boolean {
  const site = request.headers['sec-fetch-site'];
  return site !== undefined && site !== 'same-origin' && site !== 'none';
}
