import { join } from 'node:path';
import { createEchoApi, fromDist } from '../adapters/echo-api';
import { BENCH_API_KEY, BENCH_KEY_ENV } from '../load/api-key';
import { startRedis } from '../support/stack';
import { spread } from '../support/stats';

/**
 * The cache hit and its ceiling (POST /bench/echo/{type}) in one process, through Fastify's inject
 * (no sockets, no load generator): µs per request of each, alternating, for finding where a hit's
 * time goes (run it with --cpu-prof). Uses REDIS_URL or a redis-server of its own.
 *
 *   npx node [--cpu-prof] bench/.build/bench/tuning/hit-path.js      HIT_ROUNDS (6), HIT_REQUESTS (20000), BENCH_DIST
 */
async function main(): Promise<void> {
  const dist = process.env.BENCH_DIST ?? join(process.cwd(), 'dist');
  const load = fromDist(dist);
  const { ResultCache } = load<typeof import('../../libs/cache/src')>('libs/cache/src');
  const { prepareJob } = load<typeof import('../../apps/api/src/jobs/job-input')>('apps/api/src/jobs/job-input');

  const redis = await startRedis(process.env.REDIS_URL);
  const env = { ...process.env, REDIS_URL: redis.url, REDIS_PREFIX: `hit-path-${process.pid}`, NODE_ENV: 'production', ...BENCH_KEY_ENV, LOG_LEVEL: 'warn' };
  const { app, registry } = await createEchoApi(dist, env);
  await app.init();
  await app.getHttpAdapter().getInstance().ready();
  const body = { n: 25 };
  const now = Date.now();
  const key = prepareJob(registry.get('fibonacci')!, body, 'anonymous').key;
  const entry = { id: 'hit-path', type: 'fibonacci', result: 75025, attempts: 1, createdAt: now, startedAt: now, finishedAt: now };
  // why retried: the cache connection fails fast (no offline queue) until it is ready.
  for (let tries = 0; ; tries++) {
    try {
      await app.get(ResultCache).set(key, entry, 3600);
      break;
    } catch (error) {
      if (tries === 50) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  const fastify = app.getHttpAdapter().getInstance();
  const payload = JSON.stringify(body);
  const post = (url: string) => fastify.inject({ method: 'POST', url, payload, headers: { 'content-type': 'application/json', 'x-api-key': BENCH_API_KEY } });
  const legs = { hit: '/v1/jobs/fibonacci', echo: '/bench/echo/fibonacci' };
  for (const [name, url] of Object.entries(legs)) {
    const reply = await post(url);
    if (reply.statusCode !== 200) throw new Error(`${name}: HTTP ${reply.statusCode} ${reply.body}`);
  }
  const rounds = Number(process.env.HIT_ROUNDS ?? 6);
  const requests = Number(process.env.HIT_REQUESTS ?? 20_000);
  const us: Record<string, number[]> = { hit: [], echo: [] };
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 === 0 ? (['hit', 'echo'] as const) : (['echo', 'hit'] as const);
    for (const name of order) {
      const t0 = performance.now();
      for (let i = 0; i < requests; i++) await post(legs[name]);
      us[name].push(((performance.now() - t0) * 1000) / requests);
    }
  }
  const [hit, echo] = [spread(us.hit), spread(us.echo)];
  const ratios = spread(us.hit.map((h, i) => us.echo[i] / h));
  console.log(`hit  ${hit.median.toFixed(1)} µs (${hit.min.toFixed(1)}–${hit.max.toFixed(1)})`);
  console.log(`echo ${echo.median.toFixed(1)} µs (${echo.min.toFixed(1)}–${echo.max.toFixed(1)})`);
  console.log(`echo ÷ hit (the req/s ratio without sockets) ${ratios.median.toFixed(3)} (${ratios.min.toFixed(3)}–${ratios.max.toFixed(3)})`);
  await app.close();
  await redis.stop();
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
