import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/**
 * The certificates of the PEM bundle at `path` (REDIS_TLS_CA_FILE), or the problem with it: a file
 * that cannot be read, holds no certificate or one that does not parse stops start-up here, naming
 * the variable, rather than as a TLS failure on every connection later.
 */
export function readCaFile(path: string): { pem: string } | { problem: string } {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? (error instanceof Error ? error.message : String(error));
    return { problem: `REDIS_TLS_CA_FILE: cannot read "${path}" (${reason})` };
  }
  const certificates = text.match(PEM_CERTIFICATE) ?? [];
  if (certificates.length === 0) return { problem: `REDIS_TLS_CA_FILE: "${path}" holds no PEM certificate (-----BEGIN CERTIFICATE-----)` };
  for (const [i, pem] of certificates.entries()) {
    try {
      new X509Certificate(pem);
    } catch (error) {
      return { problem: `REDIS_TLS_CA_FILE: certificate ${i + 1} of ${certificates.length} in "${path}" does not parse (${error instanceof Error ? error.message : String(error)})` };
    }
  }
  return { pem: `${certificates.join('\n')}\n` };
}
