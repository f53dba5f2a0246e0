import { pbkdf2Sync } from 'node:crypto';
import { z } from 'zod';
import { defineJob } from './define-job';

const DIGEST_BYTES = { sha1: 20, sha256: 32, sha512: 64 } as const;

/**
 * Most HMAC chains one job may ask for: iterations x output blocks (ceil(keylen / digest size)).
 * why: pbkdf2Sync runs in OpenSSL, where terminating the thread cannot reach it, so a timeout or a
 * cancel takes effect only when the call returns. This bound (10,000,000 iterations of one block,
 * 5 s of sha512 on an AMD EPYC core, 7 s on a 2.5 GHz Xeon one) keeps that wait short; without it
 * one request could hold a core for minutes.
 */
export const PBKDF2_MAX_WORK = 10_000_000;

export const pbkdf2 = defineJob({
  name: 'pbkdf2',
  version: 1,
  description:
    "PBKDF2 key derivation (node:crypto), the seed articles' thread-pool example. Result is the hex key. " +
    `iterations x ceil(keylen / digest bytes) must not exceed ${PBKDF2_MAX_WORK}.`,
  input: z
    .strictObject({
      password: z.string().min(1).max(1024),
      salt: z.string().min(1).max(1024),
      iterations: z.int().min(1).max(10_000_000),
      keylen: z.int().min(1).max(1024).default(64),
      digest: z.enum(['sha1', 'sha256', 'sha512']).default('sha512'),
    })
    .refine(({ iterations, keylen, digest }) => iterations * Math.ceil(keylen / DIGEST_BYTES[digest]) <= PBKDF2_MAX_WORK, {
      path: ['iterations'],
      message: `iterations x ceil(keylen / digest bytes) must not exceed ${PBKDF2_MAX_WORK}`,
    }),
  output: z.object({ hash: z.string() }),
  examples: [{ password: 'correct horse', salt: 'battery staple', iterations: 100_000, keylen: 32, digest: 'sha256' }],
  timeoutMs: 60_000,
  cacheTtlSeconds: 3600,
  // why: the input is a password; shared runs and results would let one API key confirm another's guess.
  share: 'caller',
  // why: the synchronous variant is right here: it blocks only this pool thread, never an event loop.
  run: ({ password, salt, iterations, keylen, digest }) => ({
    hash: pbkdf2Sync(password, salt, iterations, keylen, digest).toString('hex'),
  }),
});
