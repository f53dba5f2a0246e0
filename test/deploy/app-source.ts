import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { RedisTarget } from '@app/config';

export const ROOT = join(__dirname, '..', '..');

export function readRepoFile(path: string): string {
  return readFileSync(join(ROOT, path), 'utf8');
}

export interface AcceptedEnv {
  /** Every variable name `libs/config` reads. */
  readonly names: ReadonlySet<string>;
  /** The literal numeric defaults (`.default(3000)`); computed defaults are absent. */
  readonly numericDefaults: ReadonlyMap<string, number>;
}

/**
 * The environment variables the apps accept, read from the keys of `const schema = z.object({...})`
 * in libs/config/src/config.ts, so the deploy files are checked against the code, not a copy of it.
 */
/**
 * Variables the apps do not parse but the AWS SDK reads for an S3 blob store (docs/configuration.md#blob-store):
 * a manifest may set them beside the config's.
 */
export const AWS_SDK_ENV: ReadonlySet<string> = new Set(['AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_SESSION_TOKEN', 'AWS_REGION']);

export function readAcceptedEnv(): AcceptedEnv {
  const source = readRepoFile('libs/config/src/config.ts');
  const body = /const schema = z\.object\(\{\n([\s\S]*?)\n\}\);/.exec(source)?.[1];
  if (!body) throw new Error('libs/config/src/config.ts: no `const schema = z.object({ ... });` found');
  const names = new Set<string>();
  const numericDefaults = new Map<string, number>();
  // One entry per key, at two spaces of indentation; an entry may span several lines.
  for (const entry of body.split(/\n(?= {2}[A-Z][A-Z0-9_]*:)/)) {
    const name = /^ {2}([A-Z][A-Z0-9_]*):/.exec(entry)?.[1];
    if (!name) continue;
    names.add(name);
    const fallback = /\.default\(([\d_]+)\)/.exec(entry)?.[1];
    if (fallback) numericDefaults.set(name, Number(fallback.replaceAll('_', '')));
  }
  return { names, numericDefaults };
}

/**
 * How long the worker keeps handing jobs back after SHUTDOWN_TIMEOUT_MS before it gives up and
 * exits: Kubernetes and Compose must wait at least that long before killing it.
 */
export function readWorkerHandBackGraceMs(): number {
  const source = readRepoFile('apps/worker/src/worker.app.ts');
  const value = /const HAND_BACK_GRACE_MS = ([\d_]+);/.exec(source)?.[1];
  if (!value) throw new Error('apps/worker/src/worker.app.ts: HAND_BACK_GRACE_MS not found; update test/deploy/app-source.ts');
  return Number(value.replaceAll('_', ''));
}

/** The URL of a standalone Redis the config points at (manifests and compose name one by URL). */
export function redisUrlOf(target: RedisTarget): string {
  if (target.kind !== 'standalone') throw new Error(`${target.variable}: expected a Redis URL, found ${target.kind}`);
  return target.url;
}
