import type { KeyHolder } from '../security/api-keys';

const escape = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * The sign-in page of the docs and the dashboard: a key in, an HttpOnly cookie out. No script; the
 * form posts to /admin/login, which sends the browser back to `next`.
 */
export function loginPage({ next, error, signedInAs }: { next: string; error?: string; signedInAs?: KeyHolder }): string {
  const body = signedInAs
    ? `<p>Signed in with the ${signedInAs.role === 'admin' ? 'admin key' : 'client key'} <b>${escape(signedInAs.name)}</b>${
        signedInAs.role === 'admin' ? '' : ' (the API docs only; the queue dashboard takes an admin key)'
      }.</p>
  <form method="post" action="/admin/logout"><button type="submit">Sign out</button></form>`
    : `<p>The API docs take a client key (API_KEYS) or an admin key (ADMIN_API_KEYS); the queue dashboard an
  admin key. It is exchanged for a session that this browser's cookie names, sent only to this server
  (HttpOnly, SameSite=Strict, 8 hours or until you sign out).</p>
  ${error ? `<p class="error" role="alert">${escape(error)}</p>` : ''}
  <form method="post" action="/admin/login">
    <input type="hidden" name="next" value="${escape(next)}">
    <label>Key <input type="password" name="key" autocomplete="off" required autofocus></label>
    <button type="submit">Sign in</button>
  </form>`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="robots" content="noindex"><title>nest-offload: sign in</title>
<style>
  body { font: 15px/1.5 system-ui, sans-serif; max-width: 32rem; margin: 4rem auto; padding: 0 1rem; color: #1d2430; }
  label { display: block; margin: 1rem 0; } input[type=password] { display: block; width: 100%; padding: .4rem; font: inherit; }
  button { font: inherit; padding: .4rem 1rem; } .error { color: #b00020; }
</style></head>
<body><h1>nest-offload</h1>
  ${body}
</body></html>`;
}
