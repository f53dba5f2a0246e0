import { randomBytes } from 'node:crypto';

/**
 * The bench runs the template as production does, with an API key (API_KEYS): every request is
 * authenticated and every job records its owner, so what it measures includes that cost (the
 * lean-path targets are set with ownership on). Its clients send the key to the APIs started with it
 * (startTemplateApp registers them); other servers (the peer, the baselines) get no header.
 */
export const BENCH_API_KEY = randomBytes(24).toString('base64url');

/** The template env that turns keys on: `bench=<key>`. */
export const BENCH_KEY_ENV = { API_KEYS: `bench=${BENCH_API_KEY}` };

const keyed = new Set<string>();

/** Requests to `url`'s origin carry the bench's key from now on. */
export function sendKeyTo(url: string): void {
  keyed.add(new URL(url).origin);
}

/** The header that authenticates a request to `url`: the key for a template API started with it, none otherwise. */
export function keyHeader(url: string): Record<string, string> {
  return keyed.has(new URL(url).origin) ? { 'x-api-key': BENCH_API_KEY } : {};
}
