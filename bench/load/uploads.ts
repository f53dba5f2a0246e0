import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { request } from 'node:http';

const ZIP_MAGIC = Buffer.from([0x50, 0x4b, 0x03, 0x04]);

/** A multipart/form-data body's parts around one file: the `input` part, the file part's header, and the closing boundary. */
function multipart(input: unknown, part: string, filename: string, contentType: string) {
  const boundary = `----bench${randomBytes(12).toString('hex')}`;
  const head = Buffer.from(
    `--${boundary}\r\ncontent-disposition: form-data; name="input"\r\ncontent-type: application/json\r\n\r\n${JSON.stringify(input)}\r\n` +
      `--${boundary}\r\ncontent-disposition: form-data; name="${part}"; filename="${filename}"\r\ncontent-type: ${contentType}\r\n\r\n`,
  );
  return { contentType: `multipart/form-data; boundary=${boundary}`, head, tail: Buffer.from(`\r\n--${boundary}--\r\n`) };
}

/** One file to submit: its part's name, its file name and type, its size and its bytes as chunks (read once, as sent). */
export interface FilePart {
  part: string;
  filename: string;
  contentType: string;
  bytes: number;
  chunks: Iterable<Buffer>;
}

/** A submission of `input` and `file` as multipart/form-data (see multipart), streamed with sendStream; the answer. */
export function sendMultipart(url: URL, headers: Record<string, string>, input: unknown, file: FilePart, timeoutMs: number): Promise<{ status: number; text: string }> {
  const form = multipart(input, file.part, file.filename, file.contentType);
  const body = function* () {
    yield form.head;
    yield* file.chunks;
    yield form.tail;
  };
  return sendStream(url, { ...headers, 'content-type': form.contentType, 'content-length': form.head.length + file.bytes + form.tail.length }, body(), timeoutMs);
}

/**
 * `image` (a JPEG) made distinct by a comment segment (COM) after its start marker: a new SHA-256
 * (a new content key, so no cache hit and no single flight) and the same pixels, so every job is the
 * same work. Its first bytes stay a JPEG's (FF D8 FF). As chunks to send, the image not copied.
 */
export function distinct(image: Buffer, tag: string): Buffer[] {
  const text = Buffer.from(tag, 'latin1');
  const segment = Buffer.alloc(4);
  segment.writeUInt16BE(0xfffe, 0);
  segment.writeUInt16BE(text.length + 2, 2);
  return [image.subarray(0, 2), segment, text, image.subarray(2)];
}

/** A generated upload of `bytes`: a ZIP's first bytes and a nonce (a distinct file), then a shared 1 MiB of random bytes over and over. */
export function* generated(bytes: number, pattern: Buffer): Generator<Buffer> {
  const first = Buffer.concat([ZIP_MAGIC, randomBytes(60)]).subarray(0, Math.min(64, bytes));
  yield first;
  for (let sent = first.length; sent < bytes; ) {
    const chunk = pattern.subarray(0, Math.min(pattern.length, bytes - sent));
    sent += chunk.length;
    yield chunk;
  }
}

/** Streams `chunks` as a request body (with Content-Length, minding backpressure) on a connection of its own; the answer. */
export async function sendStream(url: URL, headers: Record<string, string | number>, chunks: Iterable<Buffer>, timeoutMs: number, method = 'POST'): Promise<{ status: number; text: string }> {
  const req = request({ host: url.hostname, port: url.port, path: url.pathname, method, headers, agent: false, timeout: timeoutMs });
  const answer = new Promise<{ status: number; text: string }>((resolve, reject) => {
    req.on('response', (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(parts).toString() }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`${method} ${url.pathname}: timed out`)));
    req.on('error', reject);
  });
  try {
    for (const chunk of chunks) {
      if (req.destroyed) break;
      if (!req.write(chunk)) await Promise.race([once(req, 'drain'), answer]);
    }
    req.end();
  } catch {
    // The answer says what happened (an early refusal, a reset).
  }
  return answer;
}
