import fc from 'fast-check';
import { SILENT_LOG } from './define-job';
import { markdown, MARKDOWN_MAX_CHARS, renderMarkdown } from './markdown.job';

const ctx = { attempt: 1, progress: () => undefined, log: SILENT_LOG };

/** The tags markdown-it emits for CommonMark (html off, linkify on), and the attributes it gives them. */
const TAGS = new Set(['p', 'em', 'strong', 'a', 'img', 'code', 'pre', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'ul', 'ol', 'li', 'blockquote', 'hr', 'br', 's', 'table', 'thead', 'tbody', 'tr', 'th', 'td']);
const ATTRIBUTES = new Set(['href', 'src', 'alt', 'title', 'class', 'start', 'style']);
const TAG = /^<\/?([a-z0-9]+)((?:\s+[a-z]+="[^"<>]*")*)\s*\/?>/;
const ATTRIBUTE = /\s+([a-z]+)="([^"]*)"/g;

const decodeAttribute = (value: string) =>
  value.replace(/&(quot|amp|lt|gt);/g, (_, name: string) => ({ quot: '"', amp: '&', lt: '<', gt: '>' })[name]!);

/** The scheme a browser would see: it drops tabs and newlines anywhere and C0 controls and spaces at the ends. */
const schemeOf = (url: string) => /^([a-z][a-z0-9+.-]*):/.exec(url.replace(/[\t\n\r]/g, '').replace(/^[\0- ]+/, '').toLowerCase())?.[1];

/**
 * Fails unless `html` is made only of markdown-it's own tags with quoted attributes from the list, no
 * event handler, and no URL a browser would run as script.
 */
function expectSafe(html: string): void {
  for (let at = html.indexOf('<'); at !== -1; at = html.indexOf('<', at + 1)) {
    const tag = TAG.exec(html.slice(at));
    if (!tag) throw new Error(`unexpected "<" in ${JSON.stringify(html)}`);
    expect(TAGS).toContain(tag[1]);
    for (const [, name, raw] of tag[2].matchAll(ATTRIBUTE)) {
      expect(ATTRIBUTES).toContain(name);
      if (name !== 'href' && name !== 'src') continue;
      const url = decodeAttribute(raw);
      const scheme = schemeOf(url);
      expect(['javascript', 'vbscript', 'file']).not.toContain(scheme);
      if (scheme === 'data') expect(url).toMatch(/^data:image\/(gif|png|jpeg|webp);/i);
    }
  }
}

describe('markdown job', () => {
  it('renders CommonMark, with bare URLs linked', () => {
    expect(renderMarkdown('# Title\n\nSome *emphasis*, **strong**, `code` and [a link](https://example.com/?a=1&b=2).\n\n- one\n- two\n')).toBe(
      '<h1>Title</h1>\n<p>Some <em>emphasis</em>, <strong>strong</strong>, <code>code</code> and ' +
        '<a href="https://example.com/?a=1&amp;b=2">a link</a>.</p>\n<ul>\n<li>one</li>\n<li>two</li>\n</ul>\n',
    );
    expect(renderMarkdown('see https://example.org/x')).toBe('<p>see <a href="https://example.org/x">https://example.org/x</a></p>\n');
    expect(markdown.run({ markdown: '*hi*' }, ctx)).toEqual({ html: '<p><em>hi</em></p>\n' });
  });

  it('escapes raw HTML instead of passing it through', () => {
    expect(renderMarkdown('<script>alert(1)</script>')).toBe('<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>\n');
    expect(renderMarkdown('hello <img src=x onerror=alert(1)> world')).toBe('<p>hello &lt;img src=x onerror=alert(1)&gt; world</p>\n');
    expect(renderMarkdown('<div>\n<iframe src="https://evil.example"></iframe>\n</div>')).not.toMatch(/<(div|iframe)/);
  });

  it.each([
    ['[x](javascript:alert(1))'],
    ['[x](JaVaScRiPt:alert(1))'],
    ['[x]( javascript:alert(1) )'],
    ['[x](&#106;avascript:alert(1))'],
    ['[x](&#x6A;avascript&colon;alert(1))'],
    ['[x](<javascript:alert(1)>)'],
    ['[x](vbscript:msgbox(1))'],
    ['[x](file:///etc/passwd)'],
    ['[x](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)'],
    ['![x](data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+)'],
    ['![x](javascript:alert(1))'],
    ['<javascript:alert(1)>'],
    ['[x][r]\n\n[r]: javascript:alert(1)'],
  ])('leaves a script URL as text: %s', (source) => {
    const html = renderMarkdown(source);
    expectSafe(html);
    expect(html).not.toMatch(/(href|src)=/);
  });

  it('percent-encodes a tab hidden in a scheme, which makes it a harmless relative URL', () => {
    // A browser drops a literal tab from a URL, but `%` cannot be part of a scheme.
    expect(renderMarkdown('[x](java&#x09;script:alert(1))')).toBe('<p><a href="java%09script:alert(1)">x</a></p>\n');
  });

  it('keeps quotes in titles and URLs inside their attribute', () => {
    const html = renderMarkdown('[x](https://a.example/"onmouseover="alert(1) "t\\" onclick=\\"alert(2)")');
    expectSafe(html);
    expect(html).toBe('<p><a href="https://a.example/%22onmouseover=%22alert(1)" title="t&quot; onclick=&quot;alert(2)">x</a></p>\n');
  });

  it('keeps image data URLs, which browsers do not run', () => {
    expect(renderMarkdown('![dot](data:image/png;base64,iVBORw0KGgo=)')).toBe('<p><img src="data:image/png;base64,iVBORw0KGgo=" alt="dot"></p>\n');
  });

  it('never emits a foreign tag, an event handler or a script URL, whatever the input', () => {
    const piece = fc.constantFrom(
      '<', '>', '"', "'", '`', '(', ')', '[', ']', '!', ':', '&', ';', '#', '\\', '*', '_', '|', '-', ' ', '\t', '\n', '\n\n', '    ',
      'javascript:', 'JaVaScRiPt:', 'vbscript:', 'data:text/html,', 'data:image/png;', 'file:', '&#106;', '&#x6A;', '&#x09;', '&colon;',
      '<script>', '</script>', '<img src=x ', 'onerror=', 'alert(1)', '<a href=', 'http://a.example/', 'www.a.example', 'x@a.example', 'a',
    );
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 40 }).map((pieces) => pieces.join('')), (source) => expectSafe(renderMarkdown(source))),
      { numRuns: 1000 },
    );
  });

  it('has a safety check that catches what it must', () => {
    for (const unsafe of ['<div>x</div>', '<a href="JavaScript:alert(1)">x</a>', '<a href=" \tjava\nscript:x">x</a>', '<img src="x" onerror="alert(1)">', '<img src="data:image/svg+xml,x">', '<a href=x>x</a>', 'a < b']) {
      expect(() => expectSafe(unsafe)).toThrow();
    }
  });

  it('takes at most MARKDOWN_MAX_CHARS characters and nothing but `markdown`', () => {
    expect(markdown.input.safeParse({ markdown: 'x'.repeat(MARKDOWN_MAX_CHARS) }).success).toBe(true);
    expect(markdown.input.safeParse({ markdown: 'x'.repeat(MARKDOWN_MAX_CHARS + 1) }).success).toBe(false);
    expect(markdown.input.safeParse({ markdown: '', html: true }).success).toBe(false);
    expect(markdown.input.safeParse({}).success).toBe(false);
  });
});
