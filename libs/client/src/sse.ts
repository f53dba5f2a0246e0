/** One Server-Sent Event. */
export interface SseMessage {
  /** `message` when the stream named none. */
  event: string;
  /** The data lines, joined with `\n`. */
  data: string;
  id?: string;
}

/**
 * Parses a `text/event-stream` body as the HTML standard describes: CR, LF or CRLF line ends, a
 * leading BOM, `:` comments, multi-line data, one optional space after the colon. An event is
 * dispatched at the blank line that ends it; one cut off by the end of the stream is dropped.
 */
export async function* readSse(body: ReadableStream<Uint8Array>): AsyncGenerator<SseMessage> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const lineEnd = /\r\n|\r|\n/g;
  let buffer = '';
  // why: where the search for a line end resumes, so a large event arriving in many chunks is scanned once.
  let scanned = 0;
  let started = false;
  let event = '';
  let data: string[] = [];
  let id: string | undefined;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      buffer += done ? decoder.decode() : decoder.decode(value, { stream: true });
      if (!started && buffer.length > 0) {
        started = true;
        if (buffer.charCodeAt(0) === 0xfeff) buffer = buffer.slice(1);
      }
      let lineStart = 0;
      lineEnd.lastIndex = scanned;
      for (let end = lineEnd.exec(buffer); end; end = lineEnd.exec(buffer)) {
        // why: a CR at the end of what has arrived may be the first half of a CRLF.
        if (end[0] === '\r' && end.index === buffer.length - 1 && !done) {
          lineEnd.lastIndex = end.index;
          break;
        }
        const line = buffer.slice(lineStart, end.index);
        lineStart = lineEnd.lastIndex;
        if (line === '') {
          if (data.length > 0) yield { event: event || 'message', data: data.join('\n'), ...(id !== undefined && { id }) };
          event = '';
          data = [];
        } else if (!line.startsWith(':')) {
          const colon = line.indexOf(':');
          const field = colon === -1 ? line : line.slice(0, colon);
          let value = colon === -1 ? '' : line.slice(colon + 1);
          if (value.startsWith(' ')) value = value.slice(1);
          if (field === 'event') event = value;
          else if (field === 'data') data.push(value);
          else if (field === 'id' && !value.includes('\0')) id = value;
        }
      }
      if (done) return;
      scanned = Math.max(lineEnd.lastIndex, buffer.length - (buffer.endsWith('\r') ? 1 : 0)) - lineStart;
      buffer = buffer.slice(lineStart);
    }
  } finally {
    // why: a consumer that stops early must not leave the connection open.
    await reader.cancel().catch(() => undefined);
  }
}
