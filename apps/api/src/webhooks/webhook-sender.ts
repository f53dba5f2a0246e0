import * as http from 'node:http';
import * as https from 'node:https';
import { Webhook } from 'standardwebhooks';
import type { WebhookConfig } from '@app/config';
import { guardedLookup, RefusedAddressError } from './address-guard';

/** How one POST ended, as metrics and logs name it. */
export type AttemptOutcome = 'delivered' | 'http_3xx' | 'http_4xx' | 'http_5xx' | 'gone' | 'timeout' | 'network' | 'refused';

export interface AttemptResult {
  outcome: AttemptOutcome;
  status?: number;
  /** What a 429 or 503 asked for in Retry-After. */
  retryAfterMs?: number;
  detail: string;
  ms: number;
}

class Timeout extends Error {}

function retryAfterMs(header: string | undefined, now = Date.now()): number | undefined {
  if (!header) return undefined;
  const ms = /^\d+$/.test(header.trim()) ? Number(header) * 1000 : Date.parse(header) - now;
  return Number.isFinite(ms) && ms > 0 ? ms : undefined;
}

function outcomeOf(status: number): AttemptOutcome {
  if (status >= 200 && status < 300) return 'delivered';
  if (status === 410) return 'gone';
  if (status < 400) return 'http_3xx';
  return status < 500 ? 'http_4xx' : 'http_5xx';
}

/**
 * POSTs one signed webhook (Standard Webhooks: `webhook-id`, `webhook-timestamp`, `webhook-signature`
 * over `id.timestamp.body`, signed by the `standardwebhooks` reference library). Redirects are not
 * followed (a 3xx is a failed attempt), the whole exchange has WEBHOOK_TIMEOUT_MS, and names resolve
 * through the address guard, so nothing outside the allowed hosts is ever contacted.
 */
export class WebhookSender {
  private readonly webhook: Webhook;
  private readonly lookup: ReturnType<typeof guardedLookup>;
  // why keep-alive agents: a receiver usually gets many callbacks; a reused socket saves a TLS handshake
  // each. A new socket goes through the guarded lookup again.
  private readonly agents = { 'http:': new http.Agent({ keepAlive: true, maxSockets: 64 }), 'https:': new https.Agent({ keepAlive: true, maxSockets: 64 }) };

  constructor(private readonly config: Pick<WebhookConfig, 'secret' | 'timeoutMs' | 'allowPrivateAddresses'>) {
    this.webhook = new Webhook(config.secret);
    this.lookup = guardedLookup(config.allowPrivateAddresses);
  }

  send(url: string, msgId: string, body: string): Promise<AttemptResult> {
    const target = new URL(url);
    const sentAt = new Date();
    const started = performance.now();
    const headers = {
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(body)),
      'user-agent': 'nest-offload-webhooks/1',
      'webhook-id': msgId,
      'webhook-timestamp': String(Math.floor(sentAt.getTime() / 1000)),
      'webhook-signature': this.webhook.sign(msgId, sentAt, body),
    };
    const protocol = target.protocol as 'http:' | 'https:';
    const client = protocol === 'https:' ? https : http;
    return new Promise<AttemptResult>((resolve) => {
      let done = false;
      const finish = (result: Omit<AttemptResult, 'ms'>) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        resolve({ ...result, ms: performance.now() - started });
      };
      const req = client.request(target, { method: 'POST', headers, agent: this.agents[protocol], lookup: this.lookup }, (res) => {
        const status = res.statusCode ?? 0;
        const outcome = outcomeOf(status);
        const wait = status === 429 || status === 503 ? retryAfterMs(res.headers['retry-after']) : undefined;
        // why read to the end: the socket goes back to the pool only once the response is consumed.
        res.on('error', () => undefined).on('close', () => finish({ outcome, status, retryAfterMs: wait, detail: `HTTP ${status}` }));
        res.resume();
      });
      const timer = setTimeout(() => req.destroy(new Timeout(`no answer within ${this.config.timeoutMs} ms`)), this.config.timeoutMs);
      req.on('error', (error) => {
        const outcome = error instanceof Timeout ? 'timeout' : error instanceof RefusedAddressError ? 'refused' : 'network';
        finish({ outcome, detail: error.message });
      });
      req.end(body);
    });
  }

  close(): void {
    for (const agent of Object.values(this.agents)) agent.destroy();
  }
}
