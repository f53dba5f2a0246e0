import { randomBytes } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { newNode, type RedisNode, tlsConnect, tlsSettings } from './redis-ha';
import type { TlsFiles } from './test-ca';

const ROOT = join(__dirname, '..', '..');
const SALT = randomBytes(12).toString('hex');

/** One ACL user as a file under docker/redis ships it, with a password of the test's own. */
export interface AclUser {
  name: string;
  password: string;
  /** The `user` directive without the keyword: name, `on`, password, patterns, commands. */
  rules: string;
}

/**
 * The `user` lines of `file` (docker/redis/users.conf, sentinel-users.conf), exactly as shipped
 * but for the password (`>change-me-…`, replaced by one of this test process's own, the same for
 * a name in either file) and the key and channel patterns' `nest-offload:` (replaced by `prefix:`,
 * the test's REDIS_PREFIX). Keyed by the part of the name after `nest-offload-` (`api`, `worker`,
 * `cache`).
 */
export function shippedUsers(file: string, prefix: string): Record<string, AclUser> {
  const users: Record<string, AclUser> = {};
  for (const line of readFileSync(join(ROOT, file), 'utf8').split('\n')) {
    const match = /^user (nest-offload-(\S+)) (.*)$/.exec(line);
    if (!match) continue;
    const [, name, role, rest] = match;
    // why derived from the name: a user the Sentinels and the data nodes both know has one password.
    const password = `${name}-${SALT}`;
    const rules = rest.replace(/>change-me-\S+/, `>${password}`).replace(/([~&])nest-offload:\*/g, `$1${prefix}:*`);
    users[role] = { name, password, rules: `${name} ${rules}` };
  }
  return users;
}

/**
 * A standalone redis-server serving TLS only with `tls`'s certificate, the `default` user off, and
 * `users` as its only accounts besides the test's own `harness` user (all commands).
 */
export async function startSecureRedis(tls: TlsFiles, users: AclUser[]): Promise<{ node: RedisNode; stop(): Promise<void> }> {
  const harnessPassword = randomBytes(12).toString('hex');
  const node = await newNode(
    'secure',
    harnessPassword,
    (port) => [
      ...tlsSettings(port, tls).flatMap(([name, value]) => [`--${name}`, value]),
      '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--logfile', 'redis.log', '--maxmemory-policy', 'noeviction',
      '--user', 'default', 'off',
      '--user', 'harness', 'on', `>${harnessPassword}`, '~*', '&*', '+@all',
      ...users.flatMap((user) => ['--user', ...user.rules.split(/\s+/)]),
    ],
    { ...tlsConnect(tls), username: 'harness' },
  );
  const stop = async () => {
    await node.kill();
    rmSync(node.dir, { recursive: true, force: true });
  };
  try {
    await node.start();
  } catch (error) {
    await stop();
    throw error;
  }
  return { node, stop };
}

/**
 * What `node`'s ACL LOG says it denied (a command, key or channel; failed logins are not counted):
 * `user reason context object` per entry, e.g. `nest-offload-api command toplevel client|list`.
 */
export async function aclDenials(node: RedisNode): Promise<string[]> {
  const entries = (await node.client((c) => c.call('ACL', 'LOG', '1000'))) as unknown[][];
  return entries
    .map((entry) => Object.fromEntries(Array.from({ length: entry.length / 2 }, (_, i) => [entry[2 * i], entry[2 * i + 1]])) as Record<string, string>)
    .filter((e) => e.reason !== 'auth')
    .map((e) => `${e.username} ${e.reason} ${e.context} ${e.object}`);
}
