/** A file's content: bytes (a Blob or File, a Buffer or Uint8Array), or a stream of them (a Node Readable, a web ReadableStream). */
export type FileBody = Blob | Uint8Array | AsyncIterable<Uint8Array>;

/** A file with the name and type a multipart part gives it; the API checks the type by the bytes anyway. */
export interface FilePart {
  body: FileBody;
  filename?: string;
  contentType?: string;
}

const isPart = (file: FileBody | FilePart): file is FilePart => typeof file === 'object' && 'body' in file && !(file instanceof Blob);

/**
 * The multipart/form-data body of a submission: a part `input` holding the JSON input, one part per
 * file. Bytes go as a FormData (any fetch; resent as is on a retry); with a stream among them, as a
 * stream of the parts, so no file is held whole in memory (sent once: a stream cannot be replayed).
 */
export function multipartOf(input: unknown, files: Readonly<Record<string, FileBody | FilePart>>): { body: FormData | ReadableStream<Uint8Array>; contentType?: string } {
  const parts = Object.entries(files).map(([name, file]) => ({ name, ...(isPart(file) ? file : { body: file }) }));
  if (parts.every((part) => part.body instanceof Blob || part.body instanceof Uint8Array)) {
    const form = new FormData();
    form.set('input', JSON.stringify(input));
    for (const part of parts) {
      const blob = part.body instanceof Blob ? part.body : new Blob([part.body as Uint8Array<ArrayBuffer>], { type: part.contentType });
      form.set(part.name, blob, part.filename ?? part.name);
    }
    return { body: form };
  }
  const boundary = `----nest-offload-${crypto.randomUUID()}`;
  const encoder = new TextEncoder();
  const quoted = (text: string) => text.replace(/["\r\n\\]/g, (c) => encodeURIComponent(c));
  async function* chunks(): AsyncGenerator<Uint8Array> {
    yield encoder.encode(`--${boundary}\r\nContent-Disposition: form-data; name="input"\r\nContent-Type: application/json\r\n\r\n${JSON.stringify(input)}\r\n`);
    for (const part of parts) {
      const type = part.contentType || (part.body instanceof Blob ? part.body.type : '') || 'application/octet-stream';
      yield encoder.encode(`--${boundary}\r\nContent-Disposition: form-data; name="${quoted(part.name)}"; filename="${quoted(part.filename ?? part.name)}"\r\nContent-Type: ${type}\r\n\r\n`);
      if (part.body instanceof Uint8Array) yield part.body;
      else for await (const chunk of part.body instanceof Blob ? (part.body.stream() as unknown as AsyncIterable<Uint8Array>) : part.body) yield chunk;
      yield encoder.encode('\r\n');
    }
    yield encoder.encode(`--${boundary}--\r\n`);
  }
  const iterator = chunks();
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await iterator.next();
      if (next.done) controller.close();
      else controller.enqueue(next.value);
    },
    async cancel(reason) {
      await iterator.return(reason);
    },
  });
  return { body, contentType: `multipart/form-data; boundary=${boundary}` };
}
