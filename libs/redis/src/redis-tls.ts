import { type ConnectionOptions, createSecureContext, getCACertificates, type SecureContext } from 'node:tls';
import type { RedisTarget } from '@app/config';

const contexts = new Map<string, SecureContext>();

/**
 * ioredis' `tls` option for `target`: undefined without TLS; with REDIS_TLS_CA_FILE, a context that
 * trusts its CA as well as Node's defaults (bundled roots, NODE_EXTRA_CA_CERTS). why one context
 * per CA, made once: `ca` replaces Node's roots rather than adding to them, and a context holding
 * them all costs a few ms of CPU to build, which every (re)connect would pay again.
 */
export function tlsOptions(target: RedisTarget): ConnectionOptions | undefined {
  if (!target.tls) return undefined;
  if (!target.ca) return {};
  let secureContext = contexts.get(target.ca);
  if (!secureContext) {
    secureContext = createSecureContext({ ca: [...getCACertificates('default'), target.ca] });
    contexts.set(target.ca, secureContext);
  }
  return { secureContext };
}
