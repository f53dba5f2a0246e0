import { HttpClient } from './http-client';

/**
 * Keeps `concurrency` CPU jobs in flight against a server (each caller submits, waits for the
 * result with `Prefer: wait`, and submits the next) until stopped.
 */
export class Saturator {
  completed = 0;
  failed = 0;
  private running = true;
  private readonly loops: Promise<void>[];
  private readonly client: HttpClient;

  constructor(baseUrl: string, concurrency: number, job: () => { type: string; input: unknown }) {
    this.client = new HttpClient(baseUrl, concurrency);
    this.loops = Array.from({ length: concurrency }, async () => {
      while (this.running) {
        const { type, input } = job();
        try {
          const reply = await this.client.json<{ status?: string }>('POST', `/v1/jobs/${type}`, { json: input, headers: { prefer: 'wait=60' }, timeoutMs: 120_000 });
          if (reply.status < 300 && reply.body?.status === 'completed') this.completed++;
          else this.failed++;
        } catch {
          this.failed++;
          await new Promise((r) => setTimeout(r, 50));
        }
      }
    });
  }

  /** Stops submitting and waits for the jobs in flight to finish. */
  async stop(): Promise<void> {
    this.running = false;
    await Promise.all(this.loops);
    this.client.close();
  }
}
