import type { RedisServer } from './redis';

export default async function globalTeardown(): Promise<void> {
  await (globalThis as { __redis?: RedisServer }).__redis?.stop();
}
