import { createConnection, createServer, Server, Socket } from 'node:net';
import { freePort } from './wait';

/**
 * A TCP proxy in front of a Redis that counts round trips ("flights") per connection: a client that
 * sends again after it has received a reply starts a new flight. Replies are held `delayMs` before
 * they are passed on, so a pipeline's commands have all arrived before the first reply is released
 * (one flight), while a client that waits for each reply shows one flight per command.
 */
export class RedisProxy {
  private readonly flightsByName = new Map<string, number>();
  private readonly sockets = new Set<Socket>();

  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  static async start(upstreamPort: number, delayMs: number): Promise<RedisProxy> {
    const port = await freePort();
    let proxy: RedisProxy | undefined;
    const server = createServer((client) => proxy!.relay(client, upstreamPort, delayMs));
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    proxy = new RedisProxy(server, port);
    return proxy;
  }

  /** Flights so far of the connections named `name` (CLIENT SETNAME, as ioredis sends connectionName). */
  flights(name: string): number {
    return this.flightsByName.get(name) ?? 0;
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise((resolve) => this.server.close(resolve));
  }

  private relay(client: Socket, upstreamPort: number, delayMs: number): void {
    const upstream = createConnection(upstreamPort, '127.0.0.1');
    this.sockets.add(client).add(upstream);
    let name = 'unnamed';
    let head = '';
    let replied = true; // a reply reached the client since its last send
    client.on('data', (chunk) => {
      if (head.length < 1024) {
        head += chunk.toString('latin1');
        name = /\$7\r\nsetname\r\n\$\d+\r\n([^\r]*)\r\n/i.exec(head)?.[1] ?? name;
      }
      if (replied) this.flightsByName.set(name, this.flights(name) + 1);
      replied = false;
      upstream.write(chunk);
    });
    upstream.on('data', (chunk) =>
      setTimeout(() => {
        replied = true;
        if (!client.destroyed) client.write(chunk);
      }, delayMs),
    );
    const close = () => {
      client.destroy();
      upstream.destroy();
      this.sockets.delete(client);
      this.sockets.delete(upstream);
    };
    client.on('error', close).on('close', close);
    upstream.on('error', close).on('close', close);
  }
}
