import { execFileSync } from 'node:child_process';
import { accessSync, constants, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Browser, chromium } from 'playwright-core';

const ROOT = join(__dirname, '..', '..');

const ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-dev-shm-usage',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/**
 * The Chromium the browser tests drive: CHROMIUM_PATH when set (e.g. Debian's /usr/bin/chromium),
 * else the headless build that the @sparticuz/chromium package ships inside its npm tarball, so
 * `npm ci` is all a fresh machine needs. It is unpacked once per install, under node_modules/.cache.
 */
export function chromiumPath(): string {
  const configured = process.env.CHROMIUM_PATH;
  if (configured) {
    try {
      accessSync(configured, constants.X_OK);
    } catch {
      throw new Error(`CHROMIUM_PATH=${configured} is not an executable file (unset it to use the Chromium from @sparticuz/chromium)`);
    }
    return configured;
  }
  return bundledChromium();
}

/** Launches headless Chromium; rejects (never hangs) when it cannot start. */
export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({ executablePath: chromiumPath(), args: ARGS, timeout: 60_000 });
}

function bundledChromium(): string {
  const packageDir = join(dirname(require.resolve('@sparticuz/chromium')), '..', '..');
  const { version } = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8')) as { version: string };
  const dir = join(ROOT, 'node_modules', '.cache', 'nest-offload', `chromium-${version}`);
  const binary = join(dir, 'chromium');
  if (existsSync(binary)) return binary;
  mkdirSync(dirname(dir), { recursive: true });
  // why a staging directory renamed into place: Jest runs test files in parallel workers, and the
  // package unpacks into $TMPDIR, checking only whether the binary exists (a half-written one would).
  const staging = mkdtempSync(`${dir}.unpacking-`);
  try {
    execFileSync(process.execPath, ['-e', "const c = require('@sparticuz/chromium'); (c.default ?? c).executablePath().then((p) => console.log(p))"], {
      cwd: ROOT,
      env: { ...process.env, TMPDIR: staging },
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 120_000,
    });
    renameSync(staging, dir);
  } catch (error) {
    rmSync(staging, { recursive: true, force: true });
    // Another worker finished first: use its copy.
    if (!existsSync(binary)) throw new Error(`could not unpack Chromium from @sparticuz/chromium: ${String(error)}`);
  }
  return binary;
}
