import type MarkdownIt from 'markdown-it';
import { z } from 'zod';
import { defineJob } from './define-job';

/**
 * Largest input, in characters. Measured here (one thread of a shared 2-vCPU host): 200,000
 * characters of prose render in about 0.4 s, the slowest of 20 shapes tried (a table) in 0.9 s,
 * and their HTML was at most 5.5 times the input (about 1.1 MB).
 */
export const MARKDOWN_MAX_CHARS = 200_000;

let renderer: MarkdownIt.MarkdownIt | undefined;

/**
 * CommonMark to HTML that is safe to put in a page: raw HTML in the input is escaped, never passed
 * through, and links or images to `javascript:`, `vbscript:`, `file:` or non-image `data:` URLs are
 * left as text. Bare URLs become links.
 */
export function renderMarkdown(source: string): string {
  renderer ??= createRenderer();
  return renderer.render(source);
}

function createRenderer(): MarkdownIt.MarkdownIt {
  // why here, not an import at the top: the API and the worker's main thread load every job file
  // (validation, routing), but only pool threads render, so only they load markdown-it.
  const MarkdownItClass = require('markdown-it') as typeof MarkdownIt;
  // why markdown-it with html off rather than a renderer plus an HTML sanitizer: it emits only tags
  // of its own with escaped attributes, so there is no second parser whose view of the HTML could
  // differ from the browser's.
  return new MarkdownItClass({ html: false, linkify: true });
}

export const markdown = defineJob({
  name: 'markdown',
  version: 1,
  description: 'Markdown (CommonMark, with bare URLs linked) to HTML with raw HTML escaped and script URLs dropped, via markdown-it.',
  input: z.strictObject({ markdown: z.string().max(MARKDOWN_MAX_CHARS) }),
  examples: [{ markdown: '# Release notes\n\n- **Faster** queues\n- [Docs](https://example.com/docs)' }],
  output: z.object({ html: z.string() }),
  timeoutMs: 10_000,
  cacheTtlSeconds: 3600,
  run: ({ markdown: source }) => ({ html: renderMarkdown(source) }),
});
