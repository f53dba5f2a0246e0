import { pbkdf2Sync } from 'node:crypto';
import { PBKDF2_ARGS } from '../support/bench-jobs';
import { serveSeed } from './seed-server';

/** Iterations per slice: ~1 ms of sha512 here (0.9 µs each), so the loop gets back to its I/O that often. */
const SLICE = 1000;

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Seed technique "partitioning": the CPU work cut into slices on the one event loop, each slice
 * scheduled with setImmediate so pending I/O runs in between (seed 003's getSumAsync). pbkdf2 cannot
 * be paused half-way, so this is the partitioned form of the same cost: `iterations` HMAC rounds as a
 * chain of pbkdf2Sync calls of SLICE iterations each, the key of one slice the password of the next.
 * The hash differs from one pbkdf2 call's; the work (iterations × HMAC-sha512) is the same.
 */
serveSeed(async ({ salt, iterations }) => {
  const { password, keylen, digest } = PBKDF2_ARGS;
  let key: Buffer | string = password;
  for (let done = 0; done < iterations; done += SLICE) {
    if (done > 0) await nextTurn();
    key = pbkdf2Sync(key, salt, Math.min(SLICE, iterations - done), keylen, digest);
  }
  return (key as Buffer).toString('hex');
});
