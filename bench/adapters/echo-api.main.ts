import { join } from 'node:path';
import { createEchoApi } from './echo-api';

/** The echo API as a process (see createEchoApi): the cache scenario compares cache hits with its route. */
async function main(): Promise<void> {
  const { app, config, stop } = await createEchoApi(process.env.BENCH_DIST ?? join(process.cwd(), 'dist'), process.env);
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));
  await app.listen(config.port, config.host);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
