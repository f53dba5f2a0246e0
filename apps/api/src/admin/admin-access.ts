import type { IncomingMessage } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import type { Config } from '@app/config';
import { queueKeys } from '@app/queue';
import type { RedisClient } from '@app/redis';
import { ApiError } from '../http/api-error';
import { sendProblem } from '../http/problem.reply';
import { ApiKeys, type KeyHolder, presentedKey, roleKeys } from '../security/api-keys';
import { AuthFailures, tooManyFailures } from '../security/auth-failures';
import { clientAddress, TrustedProxies } from '../security/client-address';
import { AdminSessions, cookieValue, sessionCookie } from './admin-session';
import { crossSite } from './cross-site';
import { loginPage } from './login.page';
import { registerLogin, type SignIn } from './login.routes';

/** The pages people open in a browser: the API docs and the queue dashboard. */
const BROWSER_PATHS = /^\/(docs($|[/?-])|admin\/)/;
const ADMIN_PATHS = /^\/admin\//;
const LOGIN_PATHS = new Set(['/admin/login', '/admin/logout']);
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

const ADMIN = Symbol('nest-offload.admin');
type WithAdmin = IncomingMessage & { [ADMIN]?: string };

/** The name of the key (or the signed-in key's) that passed the /admin guard; undefined on an open API. For audit lines. */
export function adminOf(req: IncomingMessage): string | undefined {
  return (req as WithAdmin)[ADMIN];
}

const wantsPage = (request: FastifyRequest) => request.method === 'GET' && /\btext\/html\b/.test(request.headers.accept ?? '');

/**
 * Guards /docs* and /admin/* (registered by other plugins, whatever they are). /docs* takes a client
 * key (API_KEYS) or an admin key (ADMIN_API_KEYS) once API_KEYS is set; /admin/* takes admin keys
 * only, once either is set, and answers a client key 403. A key comes in `Authorization: Bearer` or
 * `x-api-key` (curl, a proxy that injects it), or a browser's session cookie stands for one (signing
 * in at /admin/login, offered when one of `pages`, the paths of the pages served, needs a key). A
 * wrong key costs its address one of its tries (AuthFailures), as on /v1.
 * Must run before those routes are registered: it attaches itself to each one as it is added.
 */
export function registerAdminAccess(fastify: FastifyInstance, config: Config, redis: RedisClient, pages: readonly string[]): void {
  const docsGuarded = config.apiKeys.length > 0;
  const adminGuarded = docsGuarded || config.adminApiKeys.length > 0;
  const guardedPath = (path: string) => (ADMIN_PATHS.test(path) ? adminGuarded : docsGuarded);
  const signIn: SignIn = {
    keys: new ApiKeys(roleKeys(config)),
    failures: new AuthFailures(redis, config.redisPrefix),
    proxies: new TrustedProxies(config.trustedProxies, config.trustedProxyHops),
    sessions: new AdminSessions(redis, queueKeys(config.redisPrefix).adminSession, queueKeys(config.redisPrefix).adminSessions, roleKeys(config)),
    // why: a session opens pages only; a key none of them takes (a client key with the docs off) gets none.
    opensAPage: (holder) => pages.some((page) => holder.role === 'admin' || !ADMIN_PATHS.test(page)),
    cookie: sessionCookie(config.env),
    // why a page outside /admin/ first: every key may open it.
    pages: [...pages].sort((a, b) => Number(ADMIN_PATHS.test(a)) - Number(ADMIN_PATHS.test(b))),
  };
  const { keys, failures, proxies, sessions, cookie } = signIn;

  const pageHeaders: onRequestAsyncHookHandler = async (_request, reply) => {
    void reply.header('content-security-policy', PAGE_CSP);
  };
  const deny = (request: FastifyRequest, reply: FastifyReply) => {
    if (wantsPage(request)) {
      return reply.status(401).type('text/html; charset=utf-8').header('cache-control', 'no-store').send(loginPage({ next: request.url }));
    }
    sendProblem(
      new ApiError('UNAUTHORIZED', 'A valid key is required (Authorization: Bearer <key>, x-api-key, or sign in at /admin/login)', {
        headers: { 'www-authenticate': 'Bearer realm="nest-offload"' },
      }),
      request,
      reply,
    );
    return reply;
  };
  const refuseClientKey = (request: FastifyRequest, reply: FastifyReply, holder: KeyHolder) => {
    const detail = `The queue dashboard takes admin keys (ADMIN_API_KEYS); "${holder.name}" is a client key (API_KEYS)`;
    if (wantsPage(request)) {
      return reply.status(403).type('text/html; charset=utf-8').header('cache-control', 'no-store').send(loginPage({ next: request.url, error: `${detail}.` }));
    }
    sendProblem(new ApiError('FORBIDDEN', detail), request, reply);
    return reply;
  };

  /** Who sent the request, by its key or else its session; undefined (refusal sent) for nobody. */
  const signedIn = async (request: FastifyRequest, reply: FastifyReply): Promise<{ holder: KeyHolder; bySession: boolean } | undefined> => {
    const presented = presentedKey(request.headers);
    if (presented !== undefined) {
      const holder = keys.identify(presented);
      if (holder) return { holder, bySession: false };
      const outcome = await failures.wrongKey(clientAddress(request.raw, proxies));
      if ('retryAfterSeconds' in outcome) sendProblem(tooManyFailures(outcome.retryAfterSeconds), request, reply);
      else deny(request, reply);
      return undefined;
    }
    // why no bucket for sessions: a token is 256 random bits, not worth guessing, and a browser
    // already signed in is not locked out by someone guessing keys behind the same address.
    const holder = await sessions.find(cookieValue(request.headers.cookie, cookie.name));
    if (holder) return { holder, bySession: true };
    deny(request, reply);
    return undefined;
  };
  const guard =
    (adminOnly: boolean): onRequestAsyncHookHandler =>
    async (request, reply) => {
      try {
        const who = await signedIn(request, reply);
        if (!who) return reply;
        if (adminOnly && who.holder.role !== 'admin') return refuseClientKey(request, reply, who.holder);
        (request.raw as WithAdmin)[ADMIN] = who.holder.name;
        // why: a cookie rides along on cross-site requests; SameSite=Strict stops that in today's
        // browsers, and this stops a cross-site form or fetch from changing anything in older ones.
        if (who.bySession && !SAFE_METHODS.has(request.method) && crossSite(request)) {
          sendProblem(new ApiError('FORBIDDEN', 'Cross-site requests may not change anything here'), request, reply);
          return reply;
        }
      } catch (error) {
        sendProblem(error, request, reply);
        return reply;
      }
    };
  const docsGuard = guard(false);
  const adminGuard = guard(true);

  fastify.addHook('onRoute', (route) => {
    if (!BROWSER_PATHS.test(route.url)) return;
    const hooks = [route.onRequest ?? []].flat();
    const admin = ADMIN_PATHS.test(route.url);
    const guarded = !LOGIN_PATHS.has(route.url) && (admin ? adminGuarded : docsGuarded);
    route.onRequest = [pageHeaders, ...(guarded ? [admin ? adminGuard : docsGuard] : []), ...hooks];
  });
  // Nothing to sign in to without keys, or without a page to show behind them.
  if (pages.some(guardedPath)) registerLogin(fastify, signIn);
}
