import { readSse, SseMessage } from './sse';

/** A body that delivers `text` as UTF-8 in the given chunks. */
function body(...chunks: string[]): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  return new ReadableStream({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(encoder.encode(chunk));
      controller.close();
    },
  });
}

async function all(stream: ReadableStream<Uint8Array>): Promise<SseMessage[]> {
  const messages: SseMessage[] = [];
  for await (const message of readSse(stream)) messages.push(message);
  return messages;
}

const STREAM =
  '\ufeff: keep-alive\n\n' +
  'event: progress\ndata: {"progress":10}\n\n' +
  'event:progress\r\ndata:  {"progress":20}\r\n\r\n' +
  'data: line one\rdata: line two\rid: 7\r\r' +
  'event: empty\n\n' +
  'event: completed\ndata\ndata: {"status":"completed"}\n\n' +
  'event: cut-off\ndata: never dispatched\n';

const EXPECTED: SseMessage[] = [
  { event: 'progress', data: '{"progress":10}' },
  { event: 'progress', data: ' {"progress":20}' },
  { event: 'message', data: 'line one\nline two', id: '7' },
  { event: 'completed', data: '\n{"status":"completed"}', id: '7' },
];

describe('readSse', () => {
  it('parses events, comments, CR, LF and CRLF line ends, multi-line data and ids; drops an unfinished event', async () => {
    expect(await all(body(STREAM))).toEqual(EXPECTED);
  });

  it('gives the same events however the stream is cut into chunks', async () => {
    for (let cut = 1; cut < STREAM.length; cut++) {
      expect(await all(body(STREAM.slice(0, cut), STREAM.slice(cut)))).toEqual(EXPECTED);
    }
    expect(await all(body(...STREAM.split('')))).toEqual(EXPECTED);
  });

  it('decodes a character split across chunks', async () => {
    const bytes = new TextEncoder().encode('data: é€😀\n\n');
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (const byte of bytes) controller.enqueue(Uint8Array.of(byte));
        controller.close();
      },
    });
    expect(await all(stream)).toEqual([{ event: 'message', data: 'é€😀' }]);
  });

  it('reads a large event in many chunks', async () => {
    const data = 'x'.repeat(1_000_000);
    const chunks = `data: ${data}\n\n`.match(/[\s\S]{1,1000}/g)!;
    expect(await all(body(...chunks))).toEqual([{ event: 'message', data }]);
  });

  it('cancels the body when the consumer stops early', async () => {
    let cancelled = false;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        controller.enqueue(new TextEncoder().encode('data: tick\n\n'));
      },
      cancel() {
        cancelled = true;
      },
    });
    for await (const message of readSse(stream)) {
      expect(message.data).toBe('tick');
      break;
    }
    expect(cancelled).toBe(true);
  });
});
