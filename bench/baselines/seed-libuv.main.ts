import { pbkdf2 } from 'node:crypto';
import { promisify } from 'node:util';
import { PBKDF2_ARGS } from '../support/bench-jobs';
import { serveSeed } from './seed-server';

const pbkdf2Async = promisify(pbkdf2);

/**
 * Seed technique "the libuv pool": async crypto.pbkdf2 from the handler, so OpenSSL runs on libuv's
 * thread pool and the event loop stays free (seeds 001 and 004). The pool's size is fixed at start-up
 * by UV_THREADPOOL_SIZE (default 4); the bench starts one process per size. The pool is shared with
 * fs, dns.lookup and zlib, which queue behind these jobs; this server's GET uses only the network.
 */
const { password, keylen, digest } = PBKDF2_ARGS;
serveSeed(async ({ salt, iterations }) => (await pbkdf2Async(password, salt, iterations, keylen, digest)).toString('hex'));
