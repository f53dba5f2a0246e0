import { createServer } from 'node:net';
import { join } from 'node:path';
import type { AppProcess } from '../test/support/apps';
import { redisReachable } from '../test/support/redis';
import { freePort } from '../test/support/wait';
import { startNode, startRedis, startTemplate } from './support/stack';

/**
 * `npm run demo`: Redis (REDIS_URL, else the local default when it answers, else a redis-server of
 * its own), the template's API with DEMO=true and its worker, and the in-handler baseline; prints the
 * /demo link. Ctrl-C stops everything. Ports: PORT (3000), WORKER_PORT (3001), BASELINE_PORT (3100),
 * or free ones when those are taken.
 */
async function portOr(wanted: number): Promise<number> {
  const available = await new Promise<boolean>((resolve) => {
    const server = createServer().once('error', () => resolve(false));
    server.listen(wanted, '127.0.0.1', () => server.close(() => resolve(true)));
  });
  return available ? wanted : freePort();
}

async function main(): Promise<void> {
  const root = process.env.BENCH_ROOT ?? process.cwd();
  const localDefault = 'redis://127.0.0.1:6379';
  const redis = await startRedis(process.env.REDIS_URL || ((await redisReachable(localDefault)) ? localDefault : undefined));
  const processes: AppProcess[] = [];
  let stopping = false;
  const stop = async (code: number) => {
    if (stopping) return;
    stopping = true;
    console.log('[demo] stopping');
    await Promise.all(processes.map((p) => p.stop('SIGTERM')));
    await redis.stop();
    process.exit(code);
  };
  process.once('SIGINT', () => void stop(0));
  process.once('SIGTERM', () => void stop(0));
  try {
    const apiPort = await portOr(Number(process.env.PORT ?? 3000));
    const workerPort = await portOr(Number(process.env.WORKER_PORT ?? 3001));
    const baselinePort = await portOr(Number(process.env.BASELINE_PORT ?? 3100));
    const env = { REDIS_URL: redis.url, REDIS_PREFIX: process.env.REDIS_PREFIX ?? 'nest-offload-demo', DEMO: 'true', LOG_LEVEL: 'warn' };
    const baselineEnv = { REDIS_URL: redis.url, REDIS_PREFIX: 'nest-offload-demo-baseline', BASELINE_MODE: 'inline' };
    const [{ api, worker }, baseline] = await Promise.all([
      startTemplate(root, env, { api: apiPort, worker: workerPort }),
      startNode(join(__dirname, 'baselines', 'baseline.main.js'), baselineEnv, { cwd: root, port: baselinePort }),
    ]);
    processes.push(api, worker, baseline);
    for (const p of processes) {
      void p.exited.then((code) => {
        if (stopping) return;
        console.error(`[demo] a process exited (${code}):\n${p.stderr.join('').slice(-2000)}`);
        void stop(1);
      });
    }
    console.log(
      `[demo] ${redis.own ? `started redis-server at ${redis.url}` : `using Redis at ${redis.url}`}\n` +
        `[demo] open http://127.0.0.1:${api.port}/demo?baseline=http://127.0.0.1:${baseline.port}\n` +
        '[demo] fire CPU jobs at each side and watch the ping and event-loop lines. Ctrl-C stops everything.',
    );
  } catch (error) {
    console.error(error instanceof Error ? error.message : error);
    await stop(1);
  }
}

void main();
