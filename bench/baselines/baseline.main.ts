import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { BaselineModule } from './baseline.module';

/**
 * Entry of a baseline server (see BaselineModule). Env: BASELINE_MODE (inline | bullmq), PORT, HOST,
 * REDIS_URL, REDIS_PREFIX. CORS is open so the /demo page of the template can poll it.
 */
async function main(): Promise<void> {
  const mode = process.env.BASELINE_MODE === 'bullmq' ? 'bullmq' : 'inline';
  const app = await NestFactory.create<NestFastifyApplication>(
    BaselineModule.forRoot({
      mode,
      redisUrl: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
      prefix: process.env.REDIS_PREFIX ?? `baseline-${mode}`,
    }),
    new FastifyAdapter(),
    { logger: ['error', 'warn'] },
  );
  app.enableCors({ origin: true });
  app.enableShutdownHooks(['SIGTERM', 'SIGINT']);
  await app.listen(Number(process.env.PORT ?? 3100), process.env.HOST ?? '127.0.0.1');
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
