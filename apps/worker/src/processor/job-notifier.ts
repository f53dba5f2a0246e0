import { Inject, Injectable } from '@nestjs/common';
import { CONFIG, type Config } from '@app/config';
import { bullKey, type JobNotice, type JobRecord, NOTICE_RESULT_MAX, NOTIFY, queueKeys, watchersKey } from '@app/queue';
import { LuaScript, type RedisClient } from '@app/redis';
import type { QueueJob } from './slot-worker';
import { WORKER_REDIS } from './worker-redis';

/**
 * KEYS: the job's hash, its queue's event stream and meta hash, its watchers. ARGV: job id,
 * percent, the notice. Sets the job's progress as BullMQ's own updateProgress does (the field and a
 * `progress` event, for BullMQ tools), and tells the replicas that watch it, in one round trip.
 */
const PROGRESS = new LuaScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local maxEvents = redis.call('HGET', KEYS[3], 'opts.maxLenEvents') or 10000
redis.call('HSET', KEYS[1], 'progress', ARGV[2])
redis.call('XADD', KEYS[2], 'MAXLEN', '~', maxEvents, '*', 'event', 'progress', 'jobId', ARGV[1], 'data', ARGV[2])
for _, channel in ipairs(redis.call('SMEMBERS', KEYS[4])) do redis.call('SPUBLISH', channel, ARGV[3]) end
return 0
`, 4);

/**
 * KEYS: a fan-out parent's chunk-progress hash, its job hash, event stream, meta hash and watchers
 * (one hash tag: one slot). ARGV: chunk index, its percent, chunk count, hash TTL seconds, parent id.
 * Raises the parent's progress to the chunks' average, never lowers it, records the change as
 * BullMQ's updateProgress does, and tells the parent's watchers. why one script: chunks run on
 * several workers at once; two that each read, averaged, then wrote could write an older average
 * last, and the parent's progress went backwards (test/parallel-sum.e2e-spec.ts saw 0, 1, 0, 2, 1…).
 */
const CHILD_PROGRESS = new LuaScript(`
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('EXPIRE', KEYS[1], ARGV[4])
local total = 0
for _, value in ipairs(redis.call('HVALS', KEYS[1])) do total = total + tonumber(value) end
local average = math.floor(total / tonumber(ARGV[3]))
if redis.call('EXISTS', KEYS[2]) == 0 or average <= (tonumber(redis.call('HGET', KEYS[2], 'progress')) or 0) then return -1 end
local maxEvents = redis.call('HGET', KEYS[4], 'opts.maxLenEvents') or 10000
redis.call('HSET', KEYS[2], 'progress', average)
redis.call('XADD', KEYS[3], 'MAXLEN', '~', maxEvents, '*', 'event', 'progress', 'jobId', ARGV[5], 'data', average)
local notice = cjson.encode({ id = ARGV[5], progress = average })
for _, channel in ipairs(redis.call('SMEMBERS', KEYS[5])) do redis.call('SPUBLISH', channel, notice) end
return average
`, 5);

/**
 * Tells the API replicas that wait on a job (its watchers, see the API's JobNotices) what it does:
 * its progress, and its end, with the job's record so that they answer without reading it back.
 * Every notice is one script on the worker's connection, sent right after the step it reports
 * (a finish is sent once BullMQ has recorded it, so a replica that reads the job on the notice sees
 * it finished); a job nobody watches costs that script's empty SMEMBERS, whatever the number of API
 * replicas.
 */
@Injectable()
export class JobNotifier {
  private readonly keys: ReturnType<typeof queueKeys>;

  constructor(
    @Inject(WORKER_REDIS) private readonly redis: RedisClient,
    @Inject(CONFIG) private readonly config: Config,
  ) {
    this.keys = queueKeys(config.redisPrefix);
  }

  /** Job `job`'s progress is now `percent`. */
  progress(job: QueueJob, percent: number): Promise<unknown> {
    const key = (structure: string) => bullKey(this.config.redisPrefix, job.queueName, structure);
    const notice: JobNotice = { id: job.id!, progress: percent };
    return PROGRESS.run(this.redis, key(job.id!), key('events'), key('meta'), this.watchers(job.queueName, job.id!), job.id!, String(percent), JSON.stringify(notice));
  }

  /**
   * A chunk of fan-out job `job.data.parent` is at `percent`: its parent (in the same queue) follows
   * the chunks' average.
   */
  childProgress(job: QueueJob, percent: number): Promise<unknown> {
    const { id, index, of } = job.data.parent!;
    const key = (structure: string) => bullKey(this.config.redisPrefix, job.queueName, structure);
    return CHILD_PROGRESS.run(
      this.redis,
      this.keys.fanOutProgress(job.queueName, id),
      key(id),
      key('events'),
      key('meta'),
      this.watchers(job.queueName, id),
      String(index),
      String(percent),
      String(of),
      String(this.config.jobRetentionSeconds),
      id,
    );
  }

  /**
   * Job `job` ended: completed with `result` (what its run returned), or failed for good (BullMQ has
   * recorded it). Fire and forget. why `result` and not `job.returnvalue`: BullMQ keeps
   * `returnValue || undefined` on the job it completed, so 0, false, "" and null would vanish.
   */
  final(job: QueueJob, state: 'completed' | 'failed', result?: unknown): void {
    const record: JobRecord = {
      name: job.name,
      progress: job.progress,
      returnvalue: state === 'completed' ? result : null,
      failedReason: job.failedReason,
      attemptsMade: job.attemptsMade,
      attemptsStarted: job.attemptsStarted,
      timestamp: job.timestamp,
      processedOn: job.processedOn,
      finishedOn: job.finishedOn,
    };
    let message = JSON.stringify({ id: job.id!, final: state, record } satisfies JobNotice);
    // why: a large result would be copied to every watcher; they read it from the job instead.
    if (message.length > NOTICE_RESULT_MAX) message = JSON.stringify({ id: job.id!, final: state } satisfies JobNotice);
    this.notify(job.queueName, job.id!, message, true);
  }

  /** Job `id` of `queue` changed in a way its watchers should read it again for (failed after stalling). */
  settled(queue: string, id: string): void {
    this.notify(queue, id, JSON.stringify({ id, settled: true } satisfies JobNotice), false);
  }

  private notify(queue: string, id: string, message: string, final: boolean): void {
    void NOTIFY.run(this.redis, this.watchers(queue, id), message, final ? '1' : '0').catch(() => undefined);
  }

  private watchers(queue: string, id: string): string {
    return watchersKey(this.config.redisPrefix, queue, id);
  }
}
