import cluster from 'node:cluster';
import { noProgress } from './no-progress';
import { serveSeed } from './seed-server';
import { benchJobs } from '../support/bench-jobs';

/**
 * Seed technique "cluster mode": the in-handler server (pbkdf2Sync in the request handler, blocking
 * its event loop for the whole job) forked once per core with node:cluster. The workers share the
 * port; the primary hands them connections round-robin. Env: CLUSTER_WORKERS (2), and serveSeed's.
 */
if (cluster.isPrimary) {
  const workers = Array.from({ length: Number(process.env.CLUSTER_WORKERS ?? 2) }, () => cluster.fork());
  let stopping = false;
  cluster.on('exit', (_worker, code, signal) => {
    if (!stopping) {
      console.error(`a cluster worker died (${signal ?? code}): stopping`);
      process.exit(1);
    }
  });
  const stop = () => {
    stopping = true;
    for (const w of workers) w.kill('SIGTERM');
    // why: exit once every worker has, so the bench's stop() resolves when the port is free.
    const check = setInterval(() => workers.every((w) => w.isDead()) && process.exit(0), 20);
    check.unref();
    setTimeout(() => process.exit(0), 5000).unref();
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
} else {
  serveSeed(async (input) => (benchJobs.pbkdf2.run(input, noProgress) as { hash: string }).hash);
}
