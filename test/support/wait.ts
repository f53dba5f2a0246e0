import { readFileSync } from 'node:fs';
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
 * Where freePort picks ports: below the host's ephemeral range (Linux's ip_local_port_range,
 * 32768–60999 by default). why: a port from listen(0) comes from that range, and between its check
 * and the server that then binds it (an app's start, a second or so), any outgoing connection on the
 * host (a Redis client, an HTTP request of another suite) may take it as its local port: the server
 * then fails with EADDRINUSE (seen in the bench smoke of `npm test`). No connection takes a port
 * below it. Undefined where the range cannot be read or leaves too little room below: listen(0) then.
 */
const PORTS = ((): { from: number; to: number } | undefined => {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return low > 16_000 ? { from: 15_000, to: low - 1 } : undefined;
  } catch {
    return undefined;
  }
})();
/** Ports this process handed out: never twice, though their servers may have stopped since. */
const handedOut = new Set<number>();

/** A TCP port nobody listens on right now, below the ephemeral range, not handed out before by this process. */
export async function freePort(): Promise<number> {
  if (!PORTS) return listenOn(0);
  for (let tries = 0; tries < 1000; tries++) {
    const port = PORTS.from + Math.floor(Math.random() * (PORTS.to - PORTS.from + 1));
    if (handedOut.has(port) || (await listenOn(port).catch(() => undefined)) === undefined) continue;
    handedOut.add(port);
    return port;
  }
  throw new Error(`no free port in ${PORTS.from}–${PORTS.to} after 1000 tries`);
}

/** Listens on `port` of 127.0.0.1 (0: any the system picks), closes, and resolves with the port. */
function listenOn(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      const bound = (server.address() as { port: number }).port;
      server.close(() => resolve(bound));
    });
  });
}
