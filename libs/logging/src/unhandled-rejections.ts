import type { Logger } from './logger';

/**
 * What both apps do with a promise that rejects with no handler: log it at error level, with its
 * stack, and go on. why not exit (Node's default): such a rejection is a missing handler, not state
 * left half-changed (the throw unwound inside a promise chain), and its usual cause is one every
 * replica sees at once (a Redis fault, test/redis.e2e-spec.ts): exiting would restart the whole
 * fleet together and drop every request and job in flight. An uncaught exception still ends the
 * process, as Node does by default: a synchronous throw may have left anything half-done. The
 * error line is what alerting catches; tests fail on it.
 */
export function logUnhandledRejections(logger: Logger): void {
  process.on('unhandledRejection', (reason) => {
    logger.error({ err: reason }, 'unhandled rejection: a promise failed with nobody handling it (a bug); the process goes on');
  });
}
