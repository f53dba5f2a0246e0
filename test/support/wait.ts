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

/**
 * Ports freePort hands out: below Linux's ephemeral range (ip_local_port_range, 32768–60999 by
 * default). why: a port from listen(0) comes from that range, and between its check and the server
 * that then binds it (an app's start, a second or so), any outgoing connection on the host (a Redis
 * client, an HTTP request of another suite) may take it as its local port: the server then fails
 * with EADDRINUSE (seen in the bench smoke of `npm test`). No connection takes a port below it.
 */
const PORTS = { from: 15000, to: 32767 } as const;
/** Ports this process handed out: never twice, though their servers may have stopped since. */
const handedOut = new Set<number>();

/** A TCP port nobody listens on right now, outside the ephemeral range, not handed out before by this process. */
export async function freePort(): Promise<number> {
  for (let tries = 0; ; tries++) {
    const port = PORTS.from + Math.floor(Math.random() * (PORTS.to - PORTS.from + 1));
    if (handedOut.has(port)) continue;
    if (await listenable(port)) {
      handedOut.add(port);
      return port;
    }
    if (tries > 1000) throw new Error(`no free port in ${PORTS.from}–${PORTS.to} after ${tries} tries`);
  }
}

/** Whether a server can listen on `port` of 127.0.0.1 now (it listens, then closes). */
function listenable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}
