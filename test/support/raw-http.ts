import { connect, Socket } from 'node:net';

/** What came back on a raw TCP connection: the bytes the server sent, and whether it closed the connection. */
export interface RawReply {
  text: string;
  /** The status of the first response, if one arrived. */
  status?: number;
  /** Milliseconds until the server closed the connection; undefined if it was still open when we gave up. */
  closedAfterMs?: number;
}

const statusOf = (text: string) => {
  const match = /^HTTP\/1\.[01] (\d{3})/.exec(text);
  return match ? Number(match[1]) : undefined;
};

/** Writes `data` as is (for requests fetch refuses to send) and collects the reply for up to `timeoutMs`. */
export function rawRequest(port: number, data: string | Buffer, timeoutMs = 3000): Promise<RawReply> {
  return new Promise((resolve) => {
    const t0 = Date.now();
    const socket = connect(port, '127.0.0.1');
    let text = '';
    const done = (closed: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ text, status: statusOf(text), closedAfterMs: closed ? Date.now() - t0 : undefined });
    };
    const timer = setTimeout(() => done(false), timeoutMs);
    socket.on('data', (chunk) => (text += chunk.toString('latin1')));
    socket.on('close', () => done(true));
    socket.on('error', () => undefined);
    socket.write(data);
  });
}

/**
 * A client that sends `head` and then one character of `drip` every `everyMs` (nothing, if `drip` is
 * empty), never finishing its request: a slow or malicious client holding a connection.
 */
export class SlowClient {
  private readonly socket: Socket;
  private readonly timer?: NodeJS.Timeout;
  private readonly t0 = Date.now();
  private text = '';
  /** Resolves when the server closes the connection. */
  readonly closed: Promise<RawReply>;

  constructor(port: number, head: string, drip = '', everyMs = 500) {
    this.socket = connect(port, '127.0.0.1');
    this.socket.on('error', () => undefined);
    this.socket.on('data', (chunk) => (this.text += chunk.toString('latin1')));
    this.closed = new Promise((resolve) =>
      this.socket.once('close', () => {
        clearInterval(this.timer);
        resolve({ text: this.text, status: statusOf(this.text), closedAfterMs: Date.now() - this.t0 });
      }),
    );
    this.socket.write(head);
    let i = 0;
    if (drip) this.timer = setInterval(() => this.socket.writable && this.socket.write(drip[i++ % drip.length]), everyMs);
  }

  /** The reply so far, and whether the server has closed the connection within `ms` from now. */
  async within(ms: number): Promise<RawReply> {
    let timer: NodeJS.Timeout | undefined;
    const open = new Promise<RawReply>((resolve) => (timer = setTimeout(() => resolve({ text: this.text, status: statusOf(this.text) }), ms)));
    const reply = await Promise.race([this.closed, open]);
    clearTimeout(timer);
    return reply;
  }

  destroy(): void {
    clearInterval(this.timer);
    this.socket.destroy();
  }
}
