import { Redis, type RedisOptions } from 'ioredis';
import { ConfigError, type RedisHost, type RedisTarget } from '@app/config';
import { describeTarget, redisProblem } from './redis-refusal';
import { tlsOptions } from './redis-tls';

/** How long start-up waits for at least one listed Sentinel or cluster seed to answer. */
export const SEED_WAIT_MS = 10_000;
const RETRY_MS = 500;

type Answer = { ok: true; primary?: RedisHost } | { ok: false; problem: string } | { ok: false; unreachable: string };

const address = (h: RedisHost) => (h.host.includes(':') ? `[${h.host}]:${h.port}` : `${h.host}:${h.port}`);

/**
 * Checks at start-up that each Redis is what the configuration says, and throws a ConfigError
 * naming the variable to fix when it is not:
 * - any topology: a node that refuses the credentials (or the ACL user a command), or whose TLS
 *   certificate does not verify (unknown CA, another host name, expired), stops start-up at once,
 *   quoting the error;
 * - Sentinel and Cluster: a seed that answers as something else (not a Sentinel, no primary of that
 *   name, not a cluster node) stops at once; a list of which no seed answers within SEED_WAIT_MS
 *   stops then. One seed answering is enough: the client finds the others itself. Behind Sentinel,
 *   the primary it names is tried too, for its credentials and certificate.
 *
 * why a standalone Redis that does not answer does not stop start-up: a URL names one server, which
 * may simply not be up yet (the app is live but not ready until it is); a seed list of which nothing
 * answers is almost always a wrong list, and the client would retry it forever while the app looks
 * merely not ready. A refusal is a wrong setting either way: retrying cannot fix it.
 */
export async function checkRedisTargets(...targets: RedisTarget[]): Promise<void> {
  const results = await Promise.allSettled([...new Set(targets)].map(checkTarget));
  const failures = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []));
  const other = failures.find((f) => !(f instanceof ConfigError));
  if (other) throw other;
  const problems = failures.flatMap((f) => (f as ConfigError).problems);
  if (problems.length > 0) throw new ConfigError([...new Set(problems)]);
}

async function checkTarget(target: RedisTarget): Promise<void> {
  if (target.kind === 'standalone') {
    const answer = await ask(target, target.url);
    if ('problem' in answer) throw new ConfigError([answer.problem]);
    return;
  }
  const seeds = target.kind === 'sentinel' ? target.sentinels : target.nodes;
  const deadline = Date.now() + SEED_WAIT_MS;
  for (;;) {
    const answers = await Promise.all(seeds.map((seed) => ask(target, seed)));
    const problems = answers.flatMap((a) => ('problem' in a ? [a.problem] : []));
    const primary = answers.find((a): a is { ok: true; primary: RedisHost } => a.ok && a.primary !== undefined)?.primary;
    if (primary) {
      const answer = await ask(target, primary, 'data');
      if ('problem' in answer) throw new ConfigError([answer.problem]);
    }
    if (answers.some((a) => a.ok)) return;
    if (problems.length > 0) throw new ConfigError([...new Set(problems)]);
    if (Date.now() + RETRY_MS > deadline) {
      const why = answers.map((a, i) => `${address(seeds[i])}: ${'unreachable' in a ? a.unreachable : ''}`).join('; ');
      throw new ConfigError([`${target.variable}: none of the listed ${target.kind === 'sentinel' ? 'Sentinels' : 'cluster nodes'} answered within ${SEED_WAIT_MS / 1000} s (${why})`]);
    }
    await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
  }
}

/**
 * Connects once to `node` of `target` (a host, or a standalone target's URL) with the apps'
 * credentials and TLS, and asks what a node of its kind must answer: a Sentinel the primary's
 * address, a cluster node CLUSTER INFO, a data node PING.
 */
async function ask(target: RedisTarget, node: RedisHost | string, as: 'seed' | 'data' = 'seed'): Promise<Answer> {
  const where = typeof node === 'string' ? describeTarget(target) : address(node);
  const options: RedisOptions = {
    username: target.username,
    password: target.password,
    tls: tlsOptions(target),
    connectionName: 'nest-offload:start-up-check',
    lazyConnect: true,
    connectTimeout: 2000,
    commandTimeout: 2000,
    enableReadyCheck: false,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  };
  const client = typeof node === 'string' ? new Redis(node, options) : new Redis({ ...node, ...options });
  // why keep it: a refused AUTH or a failed TLS handshake arrives as an 'error' event, and the
  // command then fails only with "Connection is closed"; the event says why.
  let refusal: string | undefined;
  client.on('error', (error: Error) => (refusal ??= redisProblem(error, target, where)));
  try {
    await client.connect();
    if (as === 'data' || target.kind === 'standalone') {
      await client.ping();
      return { ok: true };
    }
    if (target.kind === 'sentinel') {
      const primary = (await client.call('SENTINEL', 'get-master-addr-by-name', target.name)) as [string, string] | null;
      if (primary) return { ok: true, primary: { host: primary[0], port: Number(primary[1]) } };
      const nameVar = target.variable.replace(/SENTINELS$/, 'SENTINEL_NAME');
      return { ok: false, problem: `${nameVar}: the Sentinel at ${where} monitors no primary named "${target.name}" (SENTINEL MASTERS lists the names it knows)` };
    }
    await client.cluster('INFO');
    return { ok: true };
  } catch (error) {
    const problem = refusal ?? redisProblem(error, target, where);
    if (problem) return { ok: false, problem };
    const message = (error instanceof Error ? error.message : String(error)).split('\n')[0];
    if (/unknown command/i.test(message) && target.kind === 'sentinel' && as === 'seed') {
      return { ok: false, problem: `${target.variable}: ${where} is not a Sentinel (it answered: ${message})` };
    }
    if (/cluster support disabled|unknown command/i.test(message) && target.kind === 'cluster') {
      return { ok: false, problem: `${target.variable}: ${where} is not a Redis Cluster node (it answered: ${message})` };
    }
    return { ok: false, unreachable: message };
  } finally {
    client.disconnect();
  }
}
