import type { DeadLetterListing } from './dead-letters';

const escape = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/**
 * GET /admin/dead-letters as a browser sees it (the queue dashboard links here): the page's dead
 * letters as a table, a filter form and a link to the next page. No script (the admin pages' CSP).
 */
export function deadLettersPage(page: DeadLetterListing, query: Record<string, unknown>): string {
  const value = (name: string) => (typeof query[name] === 'string' ? escape(query[name]) : '');
  const rows = page.items
    .map((item) => {
      const input = JSON.stringify(item.input);
      return `<tr><td><code>${escape(item.id)}</code></td><td>${escape(item.type)}</td><td>${escape(item.error.code)}</td><td>${escape(item.error.message.slice(0, 300))}</td><td>${item.attempts}</td><td>${escape(item.failedAt)}</td><td>${escape(item.callers.join(', '))}</td><td><code>${escape(input.length > 200 ? `${input.slice(0, 200)}…` : input)}</code></td></tr>`;
    })
    .join('\n');
  const next = page.next ? new URLSearchParams({ ...Object.fromEntries(Object.entries(query).filter(([, v]) => typeof v === 'string')), cursor: page.next } as Record<string, string>) : undefined;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Dead letters</title>
<style>body{font:14px system-ui,sans-serif;margin:1.5rem}table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:.3rem .5rem;text-align:left;vertical-align:top}code{font-size:12px;word-break:break-all}</style></head>
<body><h1>Dead letters</h1>
<p>Jobs that failed for good, newest first, kept <code>DEAD_LETTER_RETENTION_SECONDS</code>. Replay them with <code>POST /admin/dead-letters/replay</code>. <a href="/admin/queues">Queues</a></p>
<form method="get" action="/admin/dead-letters">type <input name="type" value="${value('type')}"> code <input name="code" value="${value('code')}"> since <input name="since" value="${value('since')}"> until <input name="until" value="${value('until')}"> <button>Filter</button></form>
<table><thead><tr><th>id</th><th>type</th><th>code</th><th>message</th><th>attempts</th><th>failed at</th><th>callers</th><th>input</th></tr></thead>
<tbody>
${rows || '<tr><td colspan="8">None.</td></tr>'}
</tbody></table>
${next ? `<p><a href="/admin/dead-letters?${escape(next.toString())}">Next page</a></p>` : ''}
</body></html>`;
}
