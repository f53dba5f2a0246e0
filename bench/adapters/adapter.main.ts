import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { ItemsController } from './items.controller';

@Module({ controllers: [ItemsController] })
class ItemsModule {}

/** One Nest app serving ItemsController on the adapter named by ADAPTER (fastify | express). */
async function main(): Promise<void> {
  const adapter = process.env.ADAPTER === 'express' ? new ExpressAdapter() : new FastifyAdapter();
  const app = await NestFactory.create(ItemsModule, adapter, { logger: ['error', 'warn'] });
  app.enableShutdownHooks(['SIGTERM', 'SIGINT']);
  await app.listen(Number(process.env.PORT ?? 3200), process.env.HOST ?? '127.0.0.1');
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
