import { createServer, IncomingHttpHeaders, Server } from 'node:http';
import { Webhook } from 'standardwebhooks';

export interface ReceivedWebhook {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** The event, when its signature verified (with the standardwebhooks package); undefined otherwise. */
  event?: { type: string; timestamp: string; data: any; resultOmitted?: boolean };
  /** What the receiver answered. */
  status: number;
  /** When it arrived (epoch ms). */
  at: number;
}

/**
 * A webhook receiver, as a customer would write one: it verifies every request's signature with the
 * Standard Webhooks reference library, and answers 500 to the first `failFirst` attempts of each
 * message (by webhook-id) before it accepts one with 204.
 */
export class WebhookReceiver {
  readonly received: ReceivedWebhook[] = [];

  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  static async start(secret: string, { failFirst = 0 } = {}): Promise<WebhookReceiver> {
    const verifier = new Webhook(secret);
    const attempts = new Map<string, number>();
    let receiver: WebhookReceiver;
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        let event: ReceivedWebhook['event'];
        try {
          event = verifier.verify(body, req.headers as Record<string, string>) as ReceivedWebhook['event'];
        } catch {
          event = undefined;
        }
        const id = String(req.headers['webhook-id']);
        const seen = (attempts.get(id) ?? 0) + 1;
        attempts.set(id, seen);
        const status = !event ? 401 : seen <= failFirst ? 500 : 204;
        receiver.received.push({ path: req.url ?? '', headers: req.headers, body, event, status, at: Date.now() });
        res.writeHead(status).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    receiver = new WebhookReceiver(server, (server.address() as { port: number }).port);
    return receiver;
  }

  /** The events this receiver accepted (2xx), by job id and path. */
  accepted(): ReceivedWebhook[] {
    return this.received.filter((r) => r.status < 300);
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}
