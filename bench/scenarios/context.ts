import { randomBytes } from 'node:crypto';
import type IORedis from 'ioredis';
import type { AppProcess } from '../../test/support/apps';
import type { BenchOptions } from '../support/options';
import type { Progress } from '../support/progress';
import type { BenchRedis, Env } from '../support/stack';

/** The processes a run starts; each scenario uses some of them. */
export interface Servers {
  api: AppProcess;
  worker: AppProcess;
  /** NestJS doing the CPU work in its request handler. */
  inHandler?: AppProcess;
  /** NestJS with an @nestjs/bullmq processor in the same process. */
  inProcess?: AppProcess;
  /** A plain BullMQ Worker with a trivial processor. */
  rawWorker?: AppProcess;
  /** Bare node:http: GET/POST items and a trivial /health/live. */
  plain?: AppProcess;
  /** The template's API plus POST /bench/echo/{type}: validates like a submission, answers a constant. */
  echo?: AppProcess;
  fastify?: AppProcess;
  express?: AppProcess;
  /** The seed articles' techniques on bare node:http (bench/baselines/seed-*.main.ts). */
  seedCluster?: AppProcess;
  seedPartitioned?: AppProcess;
  seedLibuv4?: AppProcess;
  seedLibuv16?: AppProcess;
}

/** The bare peer: a Nest + @nestjs/bullmq API and its worker process (baselines/peer-*.main.ts). */
export interface SharedPeer {
  api: AppProcess;
  worker: AppProcess;
}

export interface BenchContext {
  opts: BenchOptions;
  progress: Progress;
  redis: BenchRedis;
  /** A connection of the bench's own (INFO, key cleanup). */
  redisClient: IORedis;
  /** Key prefix of this run; the template uses it as is, the baselines add a suffix. */
  prefix: string;
  servers: Servers;
  /** The env the template's apps were started with (scenarios start variants from it). */
  templateEnv: Env;
  /** The bare peer, shared by the peers and files scenarios: started on the first call, stopped by run.ts. */
  sharedPeer(): Promise<SharedPeer>;
  /** bench-pbkdf2 iterations that take about `ms` on one thread of this machine. */
  iterationsFor(ms: number): number;
}

/** A value never used before in this process: fresh salts and tags, so nothing is served from cache. */
export function fresh(): string {
  return `${Date.now().toString(36)}-${randomBytes(6).toString('hex')}`;
}

let counter = 0;
/** A trivial bench-sum input no job has had (10 terms from a fresh start): no two share a cache key, all are the same work. */
export function nextTrivial(): { from: number; to: number } {
  const from = ++counter;
  return { from, to: from + 9 };
}

/** `items` rotated by `round`: alternates which side of a comparison goes first. */
export function rotate<T>(items: readonly T[], round: number): T[] {
  const k = round % items.length;
  return [...items.slice(k), ...items.slice(0, k)];
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A scenario: rounds run across passes, then one result. */
export interface Scenario<R> {
  readonly name: string;
  /** Before the first round of a pass (start extra processes, warm up). */
  beginPass?(pass: number): Promise<void>;
  round(round: number, rounds: number): Promise<void>;
  endPass?(pass: number): Promise<void>;
  result(): R;
  /** Releases what the scenario opened (clients, pools, processes). */
  close?(): Promise<void>;
}
