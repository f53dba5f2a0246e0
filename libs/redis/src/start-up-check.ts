import { Redis } from 'ioredis';
import { ConfigError, type RedisHost, type RedisTarget } from '@app/config';

/** How long start-up waits for at least one listed Sentinel or cluster seed to answer. */
export const SEED_WAIT_MS = 10_000;
const RETRY_MS = 500;

type Answer = { ok: true } | { ok: false; problem: string } | { ok: false; unreachable: string };

const address = (h: RedisHost) => (h.host.includes(':') ? `[${h.host}]:${h.port}` : `${h.host}:${h.port}`);

/**
 * Checks at start-up that a Sentinel set or a Cluster is what the configuration says, and throws a
 * ConfigError naming the variable to fix when it is not: a seed that answers as something else (not
 * a Sentinel, no primary of that name, not a cluster node, wrong password) stops at once; a list of
 * which no seed answers within SEED_WAIT_MS stops then. One seed answering is enough: the client
 * finds the others itself.
 *
 * why stop, when a standalone Redis down at start-up does not: a URL names one server, which may
 * simply not be up yet; a seed list of which nothing answers is almost always a wrong list, and
 * the client would retry it forever while the app looks merely not ready. A standalone URL is not
 * checked here (see the README's Failure modes: live but not ready until Redis appears).
 */
export async function checkRedisTargets(...targets: RedisTarget[]): Promise<void> {
  await Promise.all([...new Set(targets)].map(checkTarget));
}

async function checkTarget(target: RedisTarget): Promise<void> {
  if (target.kind === 'standalone') return;
  const seeds = target.kind === 'sentinel' ? target.sentinels : target.nodes;
  const deadline = Date.now() + SEED_WAIT_MS;
  for (;;) {
    const answers = await Promise.all(seeds.map((seed) => ask(target, seed)));
    if (answers.some((a) => a.ok)) return;
    const problems = answers.flatMap((a) => ('problem' in a ? [a.problem] : []));
    if (problems.length > 0) throw new ConfigError([...new Set(problems)]);
    if (Date.now() + RETRY_MS > deadline) {
      const why = answers.map((a, i) => `${address(seeds[i])}: ${'unreachable' in a ? a.unreachable : ''}`).join('; ');
      throw new ConfigError([`${target.variable}: none of the listed ${target.kind === 'sentinel' ? 'Sentinels' : 'cluster nodes'} answered within ${SEED_WAIT_MS / 1000} s (${why})`]);
    }
    await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
  }
}

async function ask(target: RedisTarget, seed: RedisHost): Promise<Answer> {
  const where = address(seed);
  const client = new Redis({
    ...seed,
    username: target.username,
    password: target.password,
    ...(target.tls ? { tls: {} } : {}),
    connectionName: 'nest-offload:start-up-check',
    lazyConnect: true,
    connectTimeout: 2000,
    commandTimeout: 2000,
    enableReadyCheck: false,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  // why keep it: a refused AUTH arrives as an 'error' event, and the command then fails only with
  // "Stream isn't writeable"; the event says why.
  let refusal: Error | undefined;
  client.on('error', (error: Error) => (refusal ??= /^(WRONGPASS|NOAUTH|NOPERM)/.test(error.message) ? error : undefined));
  try {
    await client.connect();
    if (target.kind === 'sentinel') {
      const primary = await client.call('SENTINEL', 'get-master-addr-by-name', target.name);
      if (primary) return { ok: true };
      const nameVar = target.variable.replace(/SENTINELS$/, 'SENTINEL_NAME');
      return { ok: false, problem: `${nameVar}: the Sentinel at ${where} monitors no primary named "${target.name}" (SENTINEL MASTERS lists the names it knows)` };
    }
    await client.cluster('INFO');
    return { ok: true };
  } catch (error) {
    const message = refusal?.message ?? (error instanceof Error ? error.message : String(error));
    if (/^(WRONGPASS|NOAUTH|NOPERM)/.test(message) || /invalid (username|password)/i.test(message)) {
      return { ok: false, problem: `REDIS_PASSWORD: ${where} (from ${target.variable}) refused the credentials REDIS_USERNAME/REDIS_PASSWORD give: ${message.split('\n')[0]}` };
    }
    if (/unknown command/i.test(message) && target.kind === 'sentinel') {
      return { ok: false, problem: `${target.variable}: ${where} is not a Sentinel (it answered: ${message.split('\n')[0]})` };
    }
    if (/cluster support disabled|unknown command/i.test(message)) {
      return { ok: false, problem: `${target.variable}: ${where} is not a Redis Cluster node (it answered: ${message.split('\n')[0]})` };
    }
    return { ok: false, unreachable: message.split('\n')[0] };
  } finally {
    client.disconnect();
  }
}
