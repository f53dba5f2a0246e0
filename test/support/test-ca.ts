import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A server's certificate and key (PEM files) and the CA file that trusts them: what redis-server's tls-* settings take. */
export interface TlsFiles {
  cert: string;
  key: string;
  ca: string;
}

const created = new Set<string>();

// A test that dies half-way must not leave key material behind.
process.once('exit', () => {
  for (const dir of created) rmSync(dir, { recursive: true, force: true });
});

/**
 * A certificate authority of the test's own, made with openssl in a temp directory (EC keys: made
 * in milliseconds), that issues server certificates for 127.0.0.1 and localhost. `remove` deletes
 * the directory.
 */
export class TestCa {
  /** The CA's certificate (PEM): what REDIS_TLS_CA_FILE names. */
  readonly file: string;

  private constructor(readonly dir: string) {
    this.file = join(dir, 'ca.pem');
  }

  static create(name: string): TestCa {
    const dir = mkdtempSync(join(tmpdir(), 'nest-offload-ca-'));
    created.add(dir);
    const ca = new TestCa(dir);
    try {
      openssl(['req', '-x509', ...EC_KEY, '-nodes', '-days', '2', '-subj', `/CN=${name}`, '-keyout', join(dir, 'ca.key'), '-out', ca.file,
        '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign']);
    } catch (error) {
      ca.remove();
      throw error;
    }
    return ca;
  }

  /** A certificate for `hosts` (DNS names or IPs) signed by this CA, with its key; `name` names the files. */
  issue(name: string, hosts: string[] = ['127.0.0.1', 'localhost']): TlsFiles {
    const [cert, key, csr, ext] = ['pem', 'key', 'csr', 'ext'].map((suffix) => join(this.dir, `${name}.${suffix}`));
    const san = hosts.map((h) => (/^[\d.]+$|:/.test(h) ? `IP:${h}` : `DNS:${h}`)).join(',');
    writeFileSync(ext, `subjectAltName=${san}\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth,clientAuth\n`);
    openssl(['req', '-new', ...EC_KEY, '-nodes', '-subj', `/CN=${hosts[0]}`, '-keyout', key, '-out', csr]);
    openssl(['x509', '-req', '-in', csr, '-CA', this.file, '-CAkey', join(this.dir, 'ca.key'), '-CAcreateserial', '-days', '2', '-extfile', ext, '-out', cert]);
    return { cert, key, ca: this.file };
  }

  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
    created.delete(this.dir);
  }
}

const EC_KEY = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1'];

function openssl(args: string[]): void {
  execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'], timeout: 10_000 });
}
