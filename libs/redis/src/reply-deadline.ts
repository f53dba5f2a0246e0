import type { Redis } from 'ioredis';

/** The part of ioredis's connection this reads (ioredis 5.11: a denque of what awaits a reply, oldest first). */
interface PendingCommand {
  command: { reject(error: Error): void };
}
interface CommandQueue {
  peekFront(): PendingCommand | undefined;
  toArray(): PendingCommand[];
}

/**
 * From now on, once Redis has left `redis`'s oldest command unanswered for `ms`, every command
 * awaiting a reply on it fails with ioredis's own "Command timed out", and so does each command sent
 * while that one still has no answer: what ioredis's `commandTimeout` gives a request (a `503`, not
 * a hang, on a frozen Redis), give or take a quarter of `ms`.
 *
 * why not `commandTimeout`: it starts and clears a timer for every command, and clearing it
 * deletes a property of the command, which leaves its object slow: with this instead, the API's
 * CPU per trivial job went 517 → 460 µs (bench/tuning/ab.ts). This is one timer per connection,
 * looking every `ms / 4` at which command heads the queue of those awaiting a reply
 * (`commandQueue`, an internal that test/bullmq-internals.e2e-spec.ts pins). Redis answers a
 * connection's commands in order, so a head that stays the same for `ms` is a Redis that answered
 * nothing meanwhile. A late reply settles nothing (the command already failed), as with ioredis's
 * timeout. Not for a Cluster client, whose connections are its own (createRedis keeps ioredis's
 * timeout there).
 */
export function failUnansweredAfter(redis: Redis, ms: number): void {
  let head: PendingCommand | undefined;
  let since = 0;
  const look = () => {
    // why read each time: ioredis makes a new queue at each connect.
    const queue = (redis as unknown as { commandQueue: CommandQueue }).commandQueue;
    const front = queue.peekFront();
    const now = Date.now();
    if (front !== head) {
      head = front;
      since = now;
    } else if (front && now - since >= ms) {
      for (const { command } of queue.toArray()) command.reject(new Error('Command timed out'));
    }
  };
  const timer = setInterval(look, ms / 4).unref();
  redis.once('end', () => clearInterval(timer));
}
