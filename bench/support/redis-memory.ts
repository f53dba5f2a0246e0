import type IORedis from 'ioredis';
import { sleep } from '../scenarios/context';

/** What Redis holds, in bytes, once writes have settled. */
export interface MemoryReading {
  /**
   * used_memory (what `maxmemory` limits) less the clients' buffers and the Lua script cache. why
   * less those: buffers come and go with traffic (Redis shrinks them lazily), and a script is
   * cached once, the first time a client runs it, however many jobs follow.
   */
  used: number;
  /**
   * `used` less the bucket arrays of the keyspace's hash tables (keys and expiries): the keys' own
   * cost. why: those arrays double (and later halve) at powers of two, a step of up to hundreds of
   * KB that would land on whichever few jobs cross it; spread over many keys they add 8-16 B a key.
   */
  keys: number;
  /** redis-server's resident set: what the machine must have. */
  rss: number;
  /**
   * The reading's breakdown: every numeric field of INFO memory, and MEMORY STATS's overhead
   * fields (`stats.<name>`, `stats.db.<n>.<name>`), so a delta says which part of used_memory moved.
   */
  fields: Record<string, number>;
}

/** INFO memory's numeric fields and MEMORY STATS's, flat (see MemoryReading.fields). */
function breakdown(info: string, stats: unknown[]): Record<string, number> {
  const fields: Record<string, number> = {};
  for (const line of info.split(/\r?\n/)) {
    const match = /^([a-z_]+):(-?\d+(?:\.\d+)?)$/.exec(line);
    if (match) fields[match[1]] = Number(match[2]);
  }
  const flat = (list: unknown[], at: string) => {
    for (let i = 0; i + 1 < list.length; i += 2) {
      const value = list[i + 1];
      const name = `${at}.${String(list[i])}`;
      if (Array.isArray(value)) flat(value, name);
      else if (typeof value === 'number' || (typeof value === 'string' && /^-?\d+(\.\d+)?$/.test(value))) fields[name] = Number(value);
    }
  };
  flat(stats, 'stats');
  return fields;
}

function field(info: string, name: string): number {
  const match = new RegExp(`^${name}:(\\d+)`, 'm').exec(info);
  return match ? Number(match[1]) : NaN;
}

/**
 * Bytes of the keyspace's bucket arrays, from MEMORY STATS: per database, overhead.hashtable.main
 * is keys × (dictEntry + robj, 24 + 16 B) plus 8 B a bucket, overhead.hashtable.expires is
 * expiries × 24 B plus 8 B a bucket (Redis 7.0's object.c).
 */
async function bucketBytes(redis: IORedis, stats: unknown[]): Promise<number> {
  const keyspace = await redis.info('keyspace');
  let total = 0;
  for (let i = 0; i < stats.length; i += 2) {
    const name = String(stats[i]);
    if (!name.startsWith('db.')) continue;
    const db = stats[i + 1] as unknown[];
    const value = (k: string) => Number(db[db.indexOf(k) + 1]);
    const match = new RegExp(`^db${name.slice(3)}:keys=(\\d+),expires=(\\d+)`, 'm').exec(keyspace);
    if (!match) continue;
    total += value('overhead.hashtable.main') - Number(match[1]) * 40 + value('overhead.hashtable.expires') - Number(match[2]) * 24;
  }
  return total;
}

/** The memory of Redis's keys once writes have settled and lazily freed values are gone: the median of 3 readings 50 ms apart. */
export async function readMemory(redis: IORedis, settleMs = 150): Promise<MemoryReading> {
  await sleep(settleMs);
  const readings: MemoryReading[] = [];
  while (readings.length < 3) {
    const info = await redis.info('memory');
    const stats = (await redis.call('MEMORY', 'STATS')) as unknown[];
    const buckets = await bucketBytes(redis, stats);
    await sleep(50);
    if (field(info, 'lazyfree_pending_objects') > 0) continue;
    const buffers = field(info, 'mem_clients_normal') + (field(info, 'mem_clients_slaves') || 0);
    const used = field(info, 'used_memory') - buffers - field(info, 'used_memory_scripts');
    readings.push({ used, keys: used - buckets, rss: field(info, 'used_memory_rss'), fields: breakdown(info, stats) });
  }
  const median = (pick: (r: MemoryReading) => number) => readings.map(pick).sort((a, b) => a - b)[1];
  const middle = [...readings].sort((a, b) => a.keys - b.keys)[1];
  return { used: median((r) => r.used), keys: median((r) => r.keys), rss: median((r) => r.rss), fields: middle.fields };
}

/** What moved between two readings' breakdowns (MemoryReading.fields), per `per` (a job), the fields that did. */
export function fieldsDelta(before: MemoryReading, after: MemoryReading, per = 1): Record<string, number> {
  const delta: Record<string, number> = {};
  for (const [name, value] of Object.entries(after.fields)) {
    const moved = (value - (before.fields[name] ?? 0)) / per;
    if (Number.isFinite(moved) && moved !== 0) delta[name] = Math.round(moved * 10) / 10;
  }
  return delta;
}

/** Keys matching `pattern` (SCAN, so Redis never blocks on a large keyspace). */
export async function scanKeys(redis: IORedis, pattern: string): Promise<string[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 5000);
    cursor = next;
    keys.push(...batch);
  } while (cursor !== '0');
  return keys;
}

/** MEMORY USAGE of each key, summed (SAMPLES 0: every element counted, exact for the key's value). */
export async function memoryUsage(redis: IORedis, keys: readonly string[]): Promise<number> {
  let total = 0;
  for (let i = 0; i < keys.length; i += 1000) {
    const replies = await redis.pipeline(keys.slice(i, i + 1000).map((key) => ['memory', 'usage', key, 'samples', '0'])).exec();
    for (const [error, bytes] of replies ?? []) {
      if (error) throw error;
      total += Number(bytes ?? 0);
    }
  }
  return total;
}

/** Deletes `keys` with DEL, not UNLINK: the memory is free when this returns, so a reading after it is exact. */
export async function deleteNow(redis: IORedis, keys: readonly string[]): Promise<void> {
  for (let i = 0; i < keys.length; i += 1000) await redis.del(...keys.slice(i, i + 1000));
}

/** MEMORY USAGE of every key matching `pattern`, by key (SCAN, then pipelined MEMORY USAGE … SAMPLES 0). */
export async function keyCensus(redis: IORedis, pattern: string): Promise<Map<string, number>> {
  const keys = await scanKeys(redis, pattern);
  const sizes = new Map<string, number>();
  for (let i = 0; i < keys.length; i += 1000) {
    const batch = keys.slice(i, i + 1000);
    const replies = await redis.pipeline(batch.map((key) => ['memory', 'usage', key, 'samples', '0'])).exec();
    for (const [j, [error, bytes]] of (replies ?? []).entries()) {
      if (error) throw error;
      // A key that expired between SCAN and MEMORY USAGE answers null: it holds nothing.
      if (bytes !== null) sizes.set(batch[j], Number(bytes));
    }
  }
  return sizes;
}

/**
 * The family of a key: its name with ids, hashes, digests and times replaced (`…:{thumbnail}:thumbnail:<id>`,
 * `…:cache:thumbnail:v1:<digest>`), so a census says which kind of key the bytes are in.
 */
export function keyFamily(key: string, prefix: string): string {
  return key
    .slice(key.startsWith(`${prefix}:`) ? prefix.length + 1 : 0)
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '<id>')
    .replace(/[0-9a-f]{64}/g, '<sha256>')
    .replace(/:v(\d+):(c:)?[A-Za-z0-9_-]{43}$/, ':v$1:<digest>')
    .replace(/\d{6,}/g, '<n>');
}

/** What changed between two censuses of the same keys: in all, and by family (keyFamily), leaving out `exclude`. */
export function censusDelta(before: Map<string, number>, after: Map<string, number>, prefix: string, exclude: readonly string[] = []): { total: number; byFamily: Record<string, number> } {
  const byFamily: Record<string, number> = {};
  let total = 0;
  for (const key of new Set([...before.keys(), ...after.keys()])) {
    if (exclude.includes(key)) continue;
    const delta = (after.get(key) ?? 0) - (before.get(key) ?? 0);
    if (delta === 0) continue;
    const family = keyFamily(key, prefix);
    byFamily[family] = (byFamily[family] ?? 0) + delta;
    total += delta;
  }
  return { total, byFamily };
}
