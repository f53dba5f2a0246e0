import { pbkdf2Sync } from 'node:crypto';
import { z } from 'zod';
import { defineJob } from './define-job';

export const pbkdf2 = defineJob({
  name: 'pbkdf2',
  version: 1,
  description: 'PBKDF2 key derivation (node:crypto), the seed articles\' thread-pool example. Result is the hex key.',
  input: z.strictObject({
    password: z.string().min(1).max(1024),
    salt: z.string().min(1).max(1024),
    iterations: z.int().min(1).max(10_000_000),
    keylen: z.int().min(1).max(1024).default(64),
    digest: z.enum(['sha1', 'sha256', 'sha512']).default('sha512'),
  }),
  output: z.object({ hash: z.string() }),
  timeoutMs: 60_000,
  cacheTtlSeconds: 3600,
  // why: the synchronous variant is right here: it blocks only this pool thread, never an event loop.
  run: ({ password, salt, iterations, keylen, digest }) => ({
    hash: pbkdf2Sync(password, salt, iterations, keylen, digest).toString('hex'),
  }),
});
