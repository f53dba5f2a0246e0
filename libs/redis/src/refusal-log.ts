import { Cluster } from 'ioredis';
import { type RedisClient, redisRefusal } from './redis.factory';

type RefusalLogger = { error(message: string, context: string): void; log(message: string, context: string): void };

/** How often the same refusal is logged again while the connections keep retrying. */
const REFUSAL_LOG_EVERY_MS = 5000;

/**
 * Logs at error level why Redis refuses `connections` after start-up (a password rotated on one
 * side only, a certificate replaced by one from another CA), naming the setting to fix; the same
 * message at most every REFUSAL_LOG_EVERY_MS, as the connections keep retrying; and once, at info
 * level, when they are accepted again. why: without it a refusal looks like an outage, a
 * reconnect loop that logs nothing. The connections' reconnecting is left as it is.
 */
export function logRedisRefusals(connections: RedisClient[], logger: RefusalLogger): void {
  const lastLogged = new Map<string, number>();
  for (const redis of new Set(connections)) {
    let refused: string | undefined;
    const onError = () => {
      const problem = redisRefusal(redis);
      if (!problem) return;
      refused = problem;
      const now = Date.now();
      if (now - (lastLogged.get(problem) ?? -Infinity) < REFUSAL_LOG_EVERY_MS) return;
      lastLogged.set(problem, now);
      logger.error(`Redis refuses the connection (retrying): ${problem}`, 'Redis');
    };
    redis.on('error', onError);
    if (redis instanceof Cluster) redis.on('node error', onError);
    redis.on('ready', () => {
      // why the map: connections refused for the same reason (queue and cache on one Redis) recover together; one line says so.
      if (refused !== undefined && lastLogged.delete(refused)) logger.log(`Redis accepts the connection again (it had refused it: ${refused})`, 'Redis');
      refused = undefined;
    });
  }
}
