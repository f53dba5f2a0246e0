import { createServer } from 'node:net';

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `check` until it returns something truthy; fails with `what` after `timeoutMs`. */
export async function waitFor<T>(
  check: () => Promise<T> | T,
  {
    timeoutMs = 10_000,
    intervalMs = 50,
    what = 'condition',
    failOn,
  }: {
    timeoutMs?: number;
    intervalMs?: number;
    what?: string | (() => string);
    /** Errors of this class end the wait at once: waiting longer cannot help. */
    failOn?: new (...args: never[]) => Error;
  } = {},
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value) return value as NonNullable<T>;
    } catch (error) {
      if (failOn && error instanceof failOn) throw error;
      last = error;
    }
    if (Date.now() > deadline) {
      const described = typeof what === 'function' ? what() : what;
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${described}${last ? ` (last error: ${String(last)})` : ''}`);
    }
    await sleep(intervalMs);
  }
}

/** A TCP port nobody listens on right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}
