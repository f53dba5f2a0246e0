import { RedisServer, redisReachable } from './redis';

/**
 * End-to-end tests need a real Redis: REDIS_URL (default redis://127.0.0.1:6379) when it answers,
 * otherwise a redis-server started here for the run. Tests isolate themselves with their own key prefix.
 */
export default async function globalSetup(): Promise<void> {
  const url = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
  if (await redisReachable(url)) {
    process.env.E2E_REDIS_URL = url;
    return;
  }
  const server = await RedisServer.start();
  (globalThis as { __redis?: RedisServer }).__redis = server;
  process.env.E2E_REDIS_URL = server.url;
  console.log(`\nno Redis at ${url}; started redis-server at ${server.url} for the tests`);
}
