import { LuaScript } from '@app/redis';
import { queuePrefix } from './queue.keys';

/** The fields of a BullMQ job a view is made of (the API's JobView is built from them). */
export interface JobRecord {
  id?: string;
  name: string;
  progress: unknown;
  returnvalue: unknown;
  failedReason?: string;
  attemptsMade: number;
  attemptsStarted?: number;
  timestamp: number;
  processedOn?: number;
  finishedOn?: number;
}

/**
 * What a worker tells the API replicas that wait on a job (`Prefer: wait`, an event stream, a joined
 * submission, a webhook delivery, a cancel's confirmation), and only them:
 * - `progress`: the job's new progress, percent;
 * - `final`: it completed or failed for good; `record` is the job as BullMQ now holds it, so the
 *   waiter answers without reading it back (absent when the result is too large to send around);
 * - `settled`: something changed that the waiter should read (a job cancelled while queued, or
 *   failed by BullMQ itself after stalling).
 */
export type JobNotice =
  | { id: string; progress: number }
  | { id: string; final: 'completed' | 'failed'; record?: JobRecord }
  | { id: string; settled: true };

/** Results of at most this many characters of JSON travel in the notice; larger ones are read back. */
export const NOTICE_RESULT_MAX = 64 * 1024;

/**
 * The sharded pub/sub channel of one API replica for the jobs of `queue`: every notice for a job it
 * waits on arrives there. why per replica and queue, not per job: a replica subscribes once at
 * start instead of once per waited job (two commands and a round trip each), and the queue's hash tag
 * keeps it on the shard that holds the queue, so the scripts below publish to it on Redis Cluster.
 */
export function noticeChannel(prefix: string, queue: string, replicaId: string): string {
  return `${queuePrefix(prefix, queue)}:api:${replicaId}`;
}

/**
 * The set of the channels (replicas) waiting on job `jobId`. A replica that submits a job and waits
 * on it adds itself on the add's connection, just before the add; one that joins it, streams it or
 * confirms its cancel adds itself, then reads the job, so a finish before it joined the set is seen
 * by that read.
 */
export function watchersKey(prefix: string, queue: string, jobId: string): string {
  return `${queuePrefix(prefix, queue)}:watch:${jobId}`;
}

/**
 * Publishes ARGV[1] (a notice) to every channel in KEYS[1] (the job's watchers); with ARGV[2] = '1'
 * (final), deletes the watchers too. Returns how many channels it published to.
 */
export const NOTIFY = new LuaScript(`
local channels = redis.call('SMEMBERS', KEYS[1])
for _, channel in ipairs(channels) do redis.call('SPUBLISH', channel, ARGV[1]) end
if ARGV[2] == '1' then redis.call('DEL', KEYS[1]) end
return #channels
`, 1);
