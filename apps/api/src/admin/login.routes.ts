import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../http/api-error';
import { sendProblem } from '../http/problem.reply';
import type { ApiKeys, KeyHolder } from '../security/api-keys';
import { type AuthFailures, tooManyFailures } from '../security/auth-failures';
import { clientAddress, type TrustedProxies } from '../security/client-address';
import { type AdminSessions, cookieValue, type SessionCookie } from './admin-session';
import { crossSite } from './cross-site';
import { loginPage } from './login.page';

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** What signing in and out needs (registerAdminAccess builds it). */
export interface SignIn {
  readonly keys: ApiKeys;
  readonly failures: AuthFailures;
  readonly proxies: TrustedProxies;
  readonly sessions: AdminSessions;
  readonly cookie: SessionCookie;
  /** Whether a session of `holder` would open any page served here. */
  readonly opensAPage: (holder: KeyHolder) => boolean;
  /** The pages a sign-in may send the browser back to (`next`); without a valid `next`, the first. */
  readonly pages: readonly string[];
}

/**
 * GET /admin/login (the form, or who is signed in), POST /admin/login (a key in, a session cookie
 * out) and POST /admin/logout (the session ended in Redis, for every replica, and the cookie cleared).
 */
export function registerLogin(fastify: FastifyInstance, { keys, failures, proxies, sessions, cookie, pages, opensAPage }: SignIn): void {
  /**
   * Where a successful sign-in may send the browser back to: a page, or a path, query or fragment
   * under one, in printable ASCII without a backslash. why ASCII: the Location header takes Latin-1
   * at most, and a character past it (`/docs/%C4%80` decoded) made the reply fail after the session
   * was stored, so a crafted link broke the sign-in; what browsers send is percent-encoded anyway.
   */
  const nextPaths = new RegExp(`^(${pages.map(escapeRegExp).join('|')})([/?#][!-\\[\\]-~]*)?$`);
  void fastify.register(async (scope) => {
    scope.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: 4096 }, (_request, body, done) =>
      done(null, Object.fromEntries(new URLSearchParams(body as string))),
    );
    const nextOf = (value: unknown) => (typeof value === 'string' && nextPaths.test(value) && !value.startsWith('//') ? value : pages[0]);
    const page = (reply: FastifyReply, status: number, html: string) =>
      reply.status(status).type('text/html; charset=utf-8').header('cache-control', 'no-store').send(html);
    const problem = (error: unknown, request: FastifyRequest, reply: FastifyReply) => {
      sendProblem(error, request, reply);
      return reply;
    };

    scope.get('/admin/login', async (request, reply) => {
      try {
        const signedInAs = await sessions.find(cookieValue(request.headers.cookie, cookie.name));
        return page(reply, 200, loginPage({ next: nextOf((request.query as { next?: unknown }).next), signedInAs }));
      } catch (error) {
        return problem(error, request, reply);
      }
    });

    scope.post('/admin/login', async (request, reply) => {
      if (crossSite(request)) return problem(new ApiError('FORBIDDEN', 'Sign in from this site’s own page'), request, reply);
      const form = (request.body ?? {}) as { key?: unknown; next?: unknown };
      const next = nextOf(form.next);
      try {
        const presented = typeof form.key === 'string' && form.key !== '' ? form.key : undefined;
        const holder = presented === undefined ? undefined : keys.identify(presented);
        // An empty form is no guess: refused without counting, like a request without a key.
        const outcome = holder ? { holder } : presented === undefined ? { wrong: true as const } : await failures.wrongKey(clientAddress(request.raw, proxies));
        if ('retryAfterSeconds' in outcome) {
          if (!/\btext\/html\b/.test(request.headers.accept ?? '')) return problem(tooManyFailures(outcome.retryAfterSeconds), request, reply);
          void reply.header('retry-after', String(outcome.retryAfterSeconds));
          return page(reply, 429, loginPage({ next, error: `Too many wrong keys from your address: try again in ${outcome.retryAfterSeconds} s.` }));
        }
        if ('wrong' in outcome) return page(reply, 401, loginPage({ next, error: 'That is not one of the keys.' }));
        if (!opensAPage(outcome.holder)) {
          const detail = `The key "${outcome.holder.name}" opens none of the pages served here (a client key opens the docs, which are off)`;
          if (!/\btext\/html\b/.test(request.headers.accept ?? '')) return problem(new ApiError('FORBIDDEN', detail), request, reply);
          return page(reply, 403, loginPage({ next, error: `${detail}.` }));
        }
        const token = await sessions.open(outcome.holder);
        return reply.status(303).header('set-cookie', cookie.set(token)).header('location', next).header('cache-control', 'no-store').send();
      } catch (error) {
        return problem(error, request, reply);
      }
    });

    // why the same check as signing in: a cross-site form must not sign a browser out either.
    scope.post('/admin/logout', async (request, reply) => {
      if (crossSite(request)) return problem(new ApiError('FORBIDDEN', 'Sign out from this site’s own page'), request, reply);
      try {
        await sessions.close(cookieValue(request.headers.cookie, cookie.name));
      } catch (error) {
        return problem(error, request, reply);
      }
      return reply.status(303).header('set-cookie', cookie.clear()).header('location', '/admin/login').header('cache-control', 'no-store').send();
    });
  });
}
