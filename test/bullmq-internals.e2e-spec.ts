import { createHash, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Socket } from 'node:net';
import { join } from 'node:path';
import { DelayedError, Job, Queue, Worker, WaitingError } from 'bullmq';
import IORedis from 'ioredis';
import type { Config } from '@app/config';
import { BULL_STRUCTURES, bullKey, callerShares, decodeNotice, deduplicationKey, heal, keepJoinable, park, PARK_DELAY_MS, release, settle, type JobData, noticeChannel, notifyCompleted, notifyProgress, queuePrefix, SCHEDULED_JOB_ID, scheduledJobId, schedulerId, watchersKey } from '@app/queue';
import { coalesceWrites } from '@app/redis';
import { JobStore } from '../apps/api/src/jobs/job-store';
import { completeAt, type QueueJob, SlotWorker } from '../apps/worker/src/processor/slot-worker';
import { Slots } from '../apps/worker/src/processor/slots';
import { uniquePrefix } from './support/apps';
import { sleep, waitFor } from './support/wait';

/**
 * What this service assumes about BullMQ beyond its documented API, checked against a real Redis:
 * the protected Worker methods SlotWorker overrides and how the main loop calls them, the completion
 * time it sets (completeAt), the job hash fields JobStore reads, the error code of removing a
 * scheduler's next job, the ids and key layout queue.keys.ts computes, deduplication (and a key kept
 * past its job's completion), the Worker's
 * events, the deferred failure, BullMQ's updateProgress script that notice.protocol.ts copies, that
 * a completion leaves within the turn its processor returns in (the final notice goes behind it),
 * and what cork.ts and reply-deadline.ts ask of ioredis.
 * package.json pins bullmq and ioredis exactly because of these; when upgrading either, run this
 * test first (docs/development.md, "Upgrading BullMQ"). Each failure names the assumption that
 * broke and the code that relies on it.
 *
 * It starts no process: BullMQ queues and workers on E2E_REDIS_URL under a key prefix of its own,
 * all closed and their keys deleted in afterAll, however far a test got.
 */

const BULLMQ = (JSON.parse(readFileSync(join(__dirname, '../node_modules/bullmq/package.json'), 'utf8')) as { version: string }).version;
const IOREDIS = (JSON.parse(readFileSync(join(__dirname, '../node_modules/ioredis/package.json'), 'utf8')) as { version: string }).version;
/** BullMQ's updateProgress script (its includes expanded) as notice.protocol.ts's PROGRESS copies it. */
const UPDATE_PROGRESS = join(__dirname, '../node_modules/bullmq/dist/cjs/scripts/updateProgress-3.js');
const UPDATE_PROGRESS_SHA256 = '40db2a637bbd2a7323eb0ac6be53074b9ea605c14369bc66d0bb1b42495eea06';
/** BullMQ's promote script, whose steps fair-share.ts's release copies. */
const PROMOTE = join(__dirname, '../node_modules/bullmq/dist/cjs/scripts/promote-9.js');
const PROMOTE_SHA256 = '0793ac8a231ab44498a4914cd059db6f4b7f69b75b7bd8b414eb47d23f31c763';

/** Fails naming the broken assumption, what relies on it, and what BullMQ did instead. */
function assume(holds: boolean, assumption: string, seen: string): void {
  if (!holds) throw new Error(`bullmq ${BULLMQ} breaks an assumption: ${assumption}\n  seen instead: ${seen}`);
}

/** Like assume, for what must happen within `timeoutMs`; `seen` is read when it did not. */
async function assumeWithin(check: () => Promise<boolean> | boolean, timeoutMs: number, assumption: string, seen: () => string): Promise<void> {
  const happened = await waitFor(check, { timeoutMs }).then(
    () => true,
    () => false,
  );
  if (!happened) assume(false, assumption, `after ${timeoutMs} ms, ${seen()}`);
}

const DATA: JobData = { inputJson: '{}', version: 1, key: 'k' };

describe(`BullMQ and ioredis internals this service relies on (bullmq ${BULLMQ}, ioredis ${IOREDIS})`, () => {
  const url = process.env.E2E_REDIS_URL!;
  const prefix = uniquePrefix('bullmq-internals');
  // why maxRetriesPerRequest null: BullMQ's requirement for a connection it is handed.
  const connection = new IORedis(url, { maxRetriesPerRequest: null });
  const closers: Array<() => Promise<unknown>> = [];
  const queue = (name: string) => {
    const q = new Queue<JobData, unknown, string>(name, { connection, prefix: queuePrefix(prefix, name) });
    closers.push(() => q.close());
    return q;
  };
  const workerOptions = (name: string) => ({ connection, prefix: queuePrefix(prefix, name) });
  // why force: a worker whose test failed may wait for a slot forever; closing must not wait for it.
  const closeLater = <T extends Worker>(worker: T): T => {
    closers.push(() => worker.close(true));
    return worker;
  };
  /** A worker that runs nothing by itself: the test takes jobs with getNextJob and finishes them. */
  const manualWorker = (name: string) => closeLater(new Worker<JobData, unknown, string>(name, null, { ...workerOptions(name), autorun: false }));
  const take = (worker: Worker, token: string) => worker.getNextJob(token, { block: false }) as Promise<QueueJob>;
  // why no job queues, cache or full config: read() given the state and queue, and removeQueued(), use only Redis and the prefix.
  const store = new JobStore(undefined as never, connection, undefined as never, { redisPrefix: prefix } as Config);

  afterAll(async () => {
    // Last opened first: workers before their queues.
    for (const close of closers.reverse()) await close().catch(() => undefined);
    try {
      let cursor = '0';
      do {
        const [next, keys] = await connection.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
        cursor = next;
        if (keys.length > 0) await connection.unlink(...keys);
      } while (cursor !== '0');
    } finally {
      connection.disconnect();
    }
  });

  describe('SlotWorker (apps/worker/src/processor/slot-worker.ts)', () => {
    interface Run {
      queue: string;
      name: string;
      token: string;
      attemptsStarted: number;
    }

    /** SlotWorkers over `queues` sharing `slots`; each job takes `ms`, and `first` decides what its first attempt does. */
    function slotWorkers(queues: string[], slots: Slots, ms: number, first: (job: QueueJob, token: string) => Promise<void> = async () => undefined) {
      const runs: Run[] = [];
      let running = 0;
      let most = 0;
      for (const name of queues) {
        const worker = new SlotWorker(
          name,
          async (job, token) => {
            running++;
            most = Math.max(most, running);
            runs.push({ queue: name, name: job.name, token: token!, attemptsStarted: job.attemptsStarted });
            try {
              if (job.attemptsStarted === 1) await first(job, token!);
              await sleep(ms);
            } finally {
              running--;
            }
          },
          workerOptions(name),
          slots,
        );
        closeLater(worker.on('error', () => undefined));
      }
      return { runs, most: () => most };
    }

    /** Samples `slots` for half a second: an idle worker may touch its slot briefly when its block for a job times out. */
    async function heldWhileIdle(slots: Slots): Promise<number> {
      let held = 0;
      for (let i = 0; i < 50; i++, await sleep(10)) held += slots.inUse;
      return held / 50;
    }

    it('fetches through moveToActive and chains jobs on one token, also after a DelayedError or WaitingError; an idle queue holds no slot', async () => {
      const q = queue('slots-one');
      for (const name of ['delayed', 'handed-back', 'plain', 'plain']) await q.add(name, DATA);
      const slots = new Slots(1);
      const runEnds = new Map<string, number>();
      const { runs } = slotWorkers([q.name], slots, 10, async (job, token) => {
        if (job.name === 'plain') {
          // As job-processor.ts does with a run's end: a time BullMQ itself would not pick.
          runEnds.set(job.id!, Date.now() - 5);
          completeAt(job, runEnds.get(job.id!)!);
        }
        // As job-processor.ts does for a newer version's job, and for a job handed back at shutdown.
        if (job.name === 'delayed') {
          await job.moveToDelayed(Date.now() + 300, token);
          throw new DelayedError();
        }
        if (job.name === 'handed-back') {
          await job.moveToWait(token);
          throw new WaitingError();
        }
      });
      await assumeWithin(
        async () => (await q.getJobCountByTypes('completed')) === 4,
        15_000,
        'with one slot, 4 jobs (one throwing DelayedError, one WaitingError) all complete: BullMQ re-fetches after those errors and chains ' +
          'the next job on the same token (handleFailed → moveToActive, processJob), and calls the moveToActive/processJob SlotWorker ' +
          'overrides; SlotWorker keys its slot by token, so a new token waits forever for the slot the old one holds',
        () => `runs ${JSON.stringify(runs)}, slot in use ${slots.inUse}`,
      );

      /** The run after the first run of job `name`, and whether it came on the same token. */
      const chained = (name: string) => {
        const i = runs.findIndex((r) => r.name === name);
        return { same: i >= 0 && runs[i + 1]?.token === runs[i].token, seen: JSON.stringify(runs.slice(i, i + 2)) };
      };
      const [delayed, handedBack, plain] = [chained('delayed'), chained('handed-back'), chained('plain')];
      assume(
        delayed.same,
        'after a job throws DelayedError, handleFailed fetches the next job with moveToActive(token) on the same token (SlotWorker.moveToActive: a held token is "inherited" and takes no second slot)',
        delayed.seen,
      );
      assume(
        handedBack.same,
        'after a job throws WaitingError, handleFailed fetches the next job with moveToActive(token) on the same token (SlotWorker.moveToActive)',
        handedBack.seen,
      );
      assume(
        plain.same,
        'a completed job chains the next one: processJob resolves with it, fetched on the same token (SlotWorker.processJob keeps the slot with the token)',
        plain.seen,
      );
      const finished = (await q.getJobs(['completed'])).filter((job) => runEnds.has(job.id!)).map((job) => [job.finishedOn, runEnds.get(job.id!)]);
      assume(
        finished.length === 2 && finished.every(([on, ended]) => on === ended),
        "moveToCompletedArgs(job, …) builds moveToFinished's arguments with the finish time at moveToFinishedKeys.length + 1, which becomes the job's finishedOn (SlotWorker dates a completion with completeAt's time, the cache entry's finishedAt)",
        JSON.stringify(finished),
      );
      const pickups = Object.fromEntries(['plain', 'delayed', 'handed-back'].map((name) => [name, runs.filter((r) => r.name === name).map((r) => r.attemptsStarted)]));
      assume(
        JSON.stringify(pickups) === JSON.stringify({ plain: [1, 1], delayed: [1, 2], 'handed-back': [1, 2] }),
        "job.attemptsStarted is 1 on a job's first pickup and counts every pickup, a delayed or handed-back one's too (job-processor.ts: the waited metric counts first pickups only)",
        JSON.stringify(pickups),
      );
      await assumeWithin(
        () => slots.inUse === 0,
        10_000,
        "a token's chain of jobs ends with processJob resolving without a next job, and SlotWorker gives its slot back",
        () => `slot in use ${slots.inUse}`,
      );
      const held = await heldWhileIdle(slots);
      assume(
        held < 0.5,
        'an idle worker waits for a job (waitForJob) before it calls moveToActive, so a queue with nothing to do holds no slot (SlotWorker: the slot is taken just before moveToActive)',
        `the slot was held ${Math.round(held * 100)}% of half a second with the queue empty`,
      );
    });

    it('with one slot shared by two queues, runs one job at a time and hands the slot over while the other queue waits', async () => {
      const [a, b] = [queue('slots-a'), queue('slots-b')];
      for (let i = 0; i < 3; i++) await Promise.all([a.add('plain', DATA), b.add('plain', DATA)]);
      const slots = new Slots(1);
      const { runs, most } = slotWorkers([a.name, b.name], slots, 30);
      await assumeWithin(
        async () => (await a.getJobCountByTypes('completed')) + (await b.getJobCountByTypes('completed')) === 6,
        15_000,
        'two SlotWorkers sharing one slot complete all 6 jobs of their queues: BullMQ chains and re-fetches on the token that holds the slot',
        () => `runs ${JSON.stringify(runs)}, slot in use ${slots.inUse}`,
      );
      assume(
        most() === 1,
        'BullMQ takes every job through the overridden moveToActive, so two SlotWorkers sharing one slot never run two jobs at once',
        `${most()} jobs ran at once`,
      );
      const order = runs.map((r) => r.queue);
      assume(
        order.every((name, i) => i === 0 || name !== order[i - 1]),
        "processJob honours the fetchNext callback SlotWorker passes (false while another queue waits for a slot): the finished job's slot goes to the waiting queue instead of to its own next job",
        order.join(', '),
      );
    });
  });

  describe('the job hash JobStore reads with HMGET (apps/api/src/jobs/job-store.ts)', () => {
    it('gives the same record as Job.fromId, waiting, active, completed and failed', async () => {
      const q = queue('fields');
      const worker = manualWorker(q.name);
      const compare = async (id: string, state: string) => {
        const job = (await Job.fromId(q, id))!;
        const expected = {
          name: job.name,
          timestamp: job.timestamp,
          progress: job.progress,
          attemptsStarted: job.attemptsStarted,
          attemptsMade: job.attemptsMade,
          processedOn: job.processedOn,
          finishedOn: job.finishedOn,
          failedReason: job.failedReason,
          returnvalue: job.returnvalue ?? undefined,
        };
        const { record } = await store.read(id, state, q);
        const seen = { ...record };
        delete seen.id;
        for (const [field, value] of Object.entries(expected)) {
          assume(
            JSON.stringify(seen[field as keyof typeof seen]) === JSON.stringify(value),
            `JobStore.read maps BullMQ's job hash fields (FIELDS: name, timestamp, progress, ats, atm/attemptsMade, processedOn, finishedOn, failedReason, returnvalue) to what Job.fromId reports; "${field}" of a ${state} job differs (a field renamed or re-encoded? see rawToJobJson in BullMQ's Redis backend)`,
            `JobStore ${JSON.stringify(seen[field as keyof typeof seen])}, Job.fromId ${JSON.stringify(value)}`,
          );
        }
      };
      // UUIDs, as the API gives: JobStore reads no other ids but a schedule's.
      const ok = await q.add('ok', DATA, { jobId: randomUUID() });
      const bad = await q.add('bad', DATA, { jobId: randomUUID(), attempts: 1 });
      await compare(ok.id!, 'waiting');

      const active = await take(worker, 't1');
      await active.updateProgress(42);
      await compare(ok.id!, 'active');
      await active.moveToCompleted({ answer: 42 }, 't1', false);
      await compare(ok.id!, 'completed');

      const failing = await take(worker, 't2');
      await failing.moveToFailed(new Error('boom'), 't2', false);
      assume((await q.getJobState(bad.id!)) === 'failed', 'a job with attempts 1 is failed after one failed attempt', await q.getJobState(bad.id!));
      await compare(bad.id!, 'failed');
    });
  });

  describe('job schedulers (job-store.ts, libs/queue/src/queue.keys.ts)', () => {
    it("names a scheduler's next job repeat:<scheduler>:<ms>, and queue.remove of it rejects with code -8", async () => {
      const q = queue('schedules');
      const id = schedulerId('fibonacci', 'nightly');
      await q.upsertJobScheduler(id, { every: 3_600_000 }, { name: 'fibonacci', data: DATA });
      const scheduler = await q.getJobScheduler(id);
      const [next] = await q.getJobs(['delayed', 'waiting', 'prioritized']);
      assume(
        next?.id === scheduledJobId(id, Number(scheduler?.next)) && SCHEDULED_JOB_ID.test(next.id),
        "a scheduler's job has the id repeat:<scheduler>:<due ms> (scheduledJobId, SCHEDULED_JOB_ID: job-store.ts accepts only these and UUIDs as job ids)",
        `job id ${next?.id}, scheduler next ${scheduler?.next}`,
      );
      const code = await q.remove(next.id!).then(
        (result) => `resolved with ${result}`,
        (error: { code?: number }) => error.code,
      );
      assume(code === -8, "queue.remove of a scheduler's next job rejects with code -8 (job-store.ts SCHEDULER_JOB: a cancel then promotes the job instead)", String(code));
      expect(await store.removeQueued(next.id!, q)).toBe(false);
      expect(await q.getJobState(next.id!)).toBe('waiting');
    });
  });

  describe('keys and counts (libs/queue/src/queue.keys.ts: KEDA triggers, metrics and tests read them)', () => {
    it('keeps each state where bullKey and BULL_STRUCTURES say, the job hash at queue.toKey(id), and counts the backlog with getJobCountByTypes', async () => {
      const q = queue('keys');
      const worker = manualWorker(q.name);
      const [, waiting] = [await q.add('a', DATA), await q.add('b', DATA)];
      await q.add('c', DATA, { priority: 5 });
      await q.add('d', DATA, { delay: 3_600_000 });
      await take(worker, 't1');
      const expected = { [BULL_STRUCTURES.waiting]: 'list', [BULL_STRUCTURES.prioritized]: 'zset', [BULL_STRUCTURES.delayed]: 'zset', [BULL_STRUCTURES.active]: 'list', events: 'stream' };
      for (const [structure, type] of Object.entries(expected)) {
        const key = bullKey(prefix, q.name, structure);
        const seen = await connection.type(key);
        const size = seen === 'list' ? await connection.llen(key) : seen === 'zset' ? await connection.zcard(key) : await connection.xlen(key);
        assume(seen === type && size >= 1, `BullMQ keeps "${structure}" as a ${type} at ${key} (bullKey: <prefix>:{<queue>}:<queue>:<structure>)`, `${seen} of ${size}`);
      }
      const hash = bullKey(prefix, q.name, waiting.id!);
      assume(
        q.toKey(waiting.id!) === hash && (await connection.type(hash)) === 'hash',
        "a job's hash is at queue.toKey(id) = bullKey(prefix, queue, id) (job-store.ts, queue.providers.ts locate, replica-ack.ts WAIT on it, dead-letters.ts SETTLE looking for a replay's job)",
        `${q.toKey(waiting.id!)} (${await connection.type(q.toKey(waiting.id!))})`,
      );
      const backlog = await q.getJobCountByTypes('waiting', 'prioritized');
      assume(backlog === 2, "getJobCountByTypes('waiting', 'prioritized') counts the jobs no worker holds yet, delayed ones not (backlog.ts, MAX_BACKLOG)", String(backlog));
    });
  });

  describe('deduplication (apps/api/src/jobs/new-job.ts, submit-pipeline.ts)', () => {
    it("add returns the existing job's id while it is queued or running, and a new job once it has completed", async () => {
      const q = queue('dedup');
      const worker = manualWorker(q.name);
      const opts = (jobId: string) => ({ jobId, deduplication: { id: 'same-input' } });
      const first = await q.add('t', DATA, opts('first'));
      const joined = await q.add('t', DATA, opts('second'));
      assume(joined.id === first.id, "add of a job whose deduplication id is in flight returns the existing job, so its id differs from the one asked for (submit-pipeline.ts: job.id !== id means joined)", String(joined.id));
      const active = await take(worker, 't1');
      const joinedRunning = await q.add('t', DATA, opts('third'));
      assume(joinedRunning.id === first.id, 'a running job is still joined', String(joinedRunning.id));
      await active.moveToCompleted('done', 't1', false);
      const after = await q.add('t', DATA, opts('fourth'));
      assume(after.id === 'fourth', 'the deduplication id is released when the job completes, so the next submission is a job of its own (new-job.ts)', String(after.id));
    });

    it('leaves a deduplication key with an expiry at the completion (keepJoinable): adds join the completed job until it lapses', async () => {
      const q = queue('dedup-kept');
      const worker = manualWorker(q.name);
      const opts = (jobId: string) => ({ jobId, deduplication: { id: 'kept-input' } });
      await q.add('t', DATA, opts('first'));
      const active = await take(worker, 't1');
      // Only a key that exists is kept: none is made for a job whose key is gone.
      await keepJoinable(connection, prefix, q.name, 'ghost', 'no-such-input', 60_000);
      expect(await connection.exists(deduplicationKey(prefix, q.name, 'no-such-input'))).toBe(0);
      await keepJoinable(connection, prefix, q.name, 'first', 'kept-input', 500);
      await active.moveToCompleted('done', 't1', false);
      const joined = await q.add('t', DATA, opts('second'));
      assume(
        joined.id === 'first',
        "a completion deletes its deduplication key only when it has no expiry (removeDeduplicationKeyIfNeededOnFinalization), and add then joins the completed job (libs/queue/src/single-flight.ts, deduplicationKey in queue.keys.ts)",
        String(joined.id),
      );
      await sleep(600);
      const after = await q.add('t', DATA, opts('third'));
      assume(after.id === 'third', 'the kept key lapses with its expiry, and the next add is a job of its own', String(after.id));
    });
  });

  describe("the Worker's events and raw job data (apps/worker/src/processor/job-processor.ts, job-notifier.ts, slot-worker.ts)", () => {
    it("emits 'completed' once BullMQ has recorded the end, and 'failed' with finishedOn set only on a final failure", async () => {
      const q = queue('worker-events');
      await q.add('ok', DATA, { jobId: 'ok' });
      await q.add('flaky', DATA, { jobId: 'flaky', attempts: 2, backoff: { type: 'fixed', delay: 1 } });
      const seen: string[] = [];
      const worker = closeLater(
        new Worker<JobData, unknown, string>(q.name, async (job) => {
          if (job.name === 'flaky') throw new Error('fails every time');
          return 'result';
        }, workerOptions(q.name)),
      );
      worker.on('completed', (job, result) => void q.getJobState(job.id!).then((state) => seen.push(`completed ${job.id} state=${state} finishedOn=${!!job.finishedOn} result=${String(result)} attemptsMade=${job.attemptsMade}`)));
      worker.on('failed', (job) => seen.push(`failed ${job?.id} finishedOn=${!!job?.finishedOn}`));
      await assumeWithin(() => seen.length === 3, 10_000, "the Worker emits 'completed' once and 'failed' for each failed attempt", () => seen.join('; '));
      const completed = seen.find((line) => line.startsWith('completed'));
      assume(
        completed === 'completed ok state=completed finishedOn=true result=result attemptsMade=1',
        "when 'completed' fires, the job is completed in Redis, the listener gets the processor's return value, and the Job object holds finishedOn and attemptsMade (job-notifier.ts sends them as the record; a watcher that reads the job on the notice sees it finished)",
        String(completed),
      );
      const failures = seen.filter((line) => line.startsWith('failed'));
      assume(
        JSON.stringify(failures) === JSON.stringify(['failed flaky finishedOn=false', 'failed flaky finishedOn=true']),
        "'failed' fires for every failed attempt, and only the last one has finishedOn (job-processor.ts: a notice ends watchers' waits on the final failure only)",
        failures.join(', '),
      );
    });

    it("fails a job whose hash holds a deferred failure ('defa') at pickup, with that reason, without running it", async () => {
      const q = queue('deferred');
      const ran: string[] = [];
      const failedAtPickup: string[] = [];
      await q.add('plain', DATA, { jobId: 'plain' });
      await q.add('flagged', DATA, { jobId: 'flagged', attempts: 3 });
      await connection.hset(q.toKey('flagged'), 'defa', 'JOB_CANCELLED: cancelled before it started');
      closeLater(
        new SlotWorker(q.name, async (job) => void ran.push(job.id!), workerOptions(q.name), new Slots(1), (job) => failedAtPickup.push(job.id!)).on('error', () => undefined),
      );
      await assumeWithin(
        async () => (await q.getJobState('plain')) === 'completed' && (await q.getJobState('flagged')) === 'failed',
        10_000,
        "a job with 'defa' in its hash fails when picked up, for good (no retry), and the others run (libs/queue flagCancelled: a cancel the API could not make by removing the job)",
        () => `ran ${ran.join(',')}; failed at pickup ${failedAtPickup.join(',')}`,
      );
      const flagged = await Job.fromId(q, 'flagged');
      assume(
        flagged?.failedReason === 'JOB_CANCELLED: cancelled before it started' && JSON.stringify(ran) === JSON.stringify(['plain']) && JSON.stringify(failedAtPickup) === JSON.stringify(['flagged']),
        "the Job BullMQ hands over carries the hash's 'defa' as deferredFailure, processJob fails the job with it as failedReason without calling the processor (SlotWorker reports it; job-view.ts reads the reason's code)",
        `failedReason ${flagged?.failedReason}; ran ${JSON.stringify(ran)}; reported ${JSON.stringify(failedAtPickup)}`,
      );
    });

    it("hands 'completed' listeners a falsy return value as it is, though the Job keeps returnValue || undefined", async () => {
      const q = queue('falsy-result');
      await q.add('zero', DATA, { jobId: 'zero' });
      const seen: string[] = [];
      const worker = closeLater(new Worker<JobData, unknown, string>(q.name, async () => 0, workerOptions(q.name)));
      worker.on('completed', (job, result) => seen.push(`result=${JSON.stringify(result)} returnvalue=${JSON.stringify(job.returnvalue)}`));
      await assumeWithin(() => seen.length === 1, 10_000, "the Worker emits 'completed' for a job that returned 0", () => seen.join('; '));
      assume(
        seen[0] === 'result=0 returnvalue=undefined',
        "'completed' passes the processor's own return value (job-notifier.ts takes that: the Job's returnvalue loses 0, false, \"\" and null)",
        seen[0],
      );
    });
  });

  describe("BullMQ's updateProgress, as PROGRESS in libs/queue/src/notice.protocol.ts copies it", () => {
    it('is the script that was copied, and our copy writes what BullMQ writes, then tells the watchers', async () => {
      const digest = createHash('sha256').update(readFileSync(UPDATE_PROGRESS)).digest('hex');
      assume(
        digest === UPDATE_PROGRESS_SHA256,
        `BullMQ's updateProgress script is the one PROGRESS copies (compare ${UPDATE_PROGRESS} with notice.protocol.ts, then update UPDATE_PROGRESS_SHA256 here)`,
        `sha256 ${digest}`,
      );
      const q = queue('progress');
      await q.add('theirs', DATA, { jobId: 'theirs' });
      await q.add('ours', DATA, { jobId: 'ours' });
      const channel = noticeChannel(prefix, q.name, 'internals');
      const subscriber = new IORedis(url);
      closers.push(async () => subscriber.disconnect());
      const heard: unknown[] = [];
      subscriber.on('smessage', (_channel: string, message: string) => heard.push(decodeNotice(message)));
      await subscriber.ssubscribe(channel);
      await connection.sadd(watchersKey(prefix, q.name, 'ours'), channel);

      await (await Job.fromId(q, 'theirs'))!.updateProgress(42);
      await notifyProgress(connection, prefix, q.name, 'ours', 42);
      const progress = await Promise.all(['theirs', 'ours'].map((id) => connection.hget(q.toKey(id), 'progress')));
      const events = (await connection.xrange(bullKey(prefix, q.name, 'events'), '-', '+')).map(([, fields]) => fields.join(' ')).filter((e) => e.startsWith('event progress'));
      assume(
        JSON.stringify(progress) === '["42","42"]' && JSON.stringify(events) === JSON.stringify(['event progress jobId theirs data 42', 'event progress jobId ours data 42']),
        "updateProgress sets the job hash's 'progress' and adds a 'progress' event (jobId, data) to the queue's stream, as PROGRESS does",
        `progress ${JSON.stringify(progress)}; events ${JSON.stringify(events)}`,
      );
      await assumeWithin(() => heard.length === 1, 5000, 'PROGRESS publishes the notice to the watchers', () => JSON.stringify(heard));
      assume(JSON.stringify(heard) === JSON.stringify([{ id: 'ours', progress: 42 }]), 'the watchers hear the progress notice', JSON.stringify(heard));
    });
  });

  describe("a completion's final notice, as job-notifier.ts sends it right behind BullMQ's completion (NOTIFY_COMPLETED)", () => {
    it("sent from completeAt's `behind` (process.nextTick as BullMQ builds the completion), goes behind the completion and publishes; sent before it, finds none", async () => {
      const q = queue('completing');
      const channel = noticeChannel(prefix, q.name, 'completing');
      const subscriber = new IORedis(url);
      closers.push(async () => subscriber.disconnect());
      const heard: unknown[] = [];
      subscriber.on('smessage', (_channel: string, message: string) => heard.push(decodeNotice(message)));
      await subscriber.ssubscribe(channel);
      await connection.sadd(watchersKey(prefix, q.name, 'done'), channel);
      // why a first job: BullMQ's first completion on a connection may load its script first (a round trip).
      await q.addBulk([{ name: 'warm', data: DATA, opts: { jobId: 'warm' } }, { name: 'done', data: DATA, opts: { jobId: 'done' } }]);
      const ended = Date.now() - 60_000;
      const early = { name: 'done', progress: 0, returnvalue: 0, attemptsMade: 1, timestamp: 0, finishedOn: ended };
      const before = await notifyCompleted(connection, prefix, q.name, 'done', early);
      const reached = new Map<string, Promise<number>>();
      const worker = new SlotWorker(
        q.name,
        async (job) => {
          const record = { name: job.name, progress: 0, returnvalue: 0, attemptsMade: job.attemptsMade + 1, timestamp: job.timestamp, finishedOn: ended };
          completeAt(job, ended, () => reached.set(job.id!, notifyCompleted(connection, prefix, q.name, job.id!, record)));
          return 0;
        },
        workerOptions(q.name),
        new Slots(1),
      );
      closeLater(worker.on('error', () => undefined));
      await assumeWithin(() => reached.size === 2, 10_000, 'the worker runs both jobs', () => [...reached.keys()].join());
      const behind = await reached.get('done');
      const finishedOn = await connection.hget(q.toKey('done'), 'finishedOn');
      assume(
        before === -1 && behind === 1 && finishedOn === String(ended),
        "BullMQ sends its completion (dated by completeAt) within the promise jobs that follow moveToCompletedArgs, so a script sent on its connection from a process.nextTick queued there goes behind it (in the same write, with coalesceWrites) and finds that finishedOn; before the completion it finds none and publishes nothing (slot-worker.ts completeAt's `behind` and job-notifier.ts `completing` rely on both)",
        `before the completion ${before}; behind it ${behind}; finishedOn ${finishedOn}, completeAt's ${ended}`,
      );
      const timestamp = (await q.getJob('done'))!.timestamp;
      await assumeWithin(() => heard.length === 1, 5000, 'the watcher hears the notice', () => JSON.stringify(heard));
      assume(
        JSON.stringify(heard) === JSON.stringify([{ id: 'done', final: 'completed', record: { name: 'done', progress: 0, returnvalue: 0, attemptsMade: 1, timestamp, finishedOn: ended, id: 'done' } }]),
        'the watcher hears the one final notice, with the result (0) and the completion time',
        JSON.stringify(heard),
      );
    });
  });

  describe("BullMQ's delayed jobs and promote, as libs/queue/src/fair-share.ts uses them", () => {
    it('is the promote script that was copied; a parked job stays delayed until released, then runs like a promoted one; finishedOn settles it', async () => {
      const digest = createHash('sha256').update(readFileSync(PROMOTE)).digest('hex');
      assume(
        digest === PROMOTE_SHA256,
        `BullMQ's promote script is the one fair-share.ts's release copies (compare ${PROMOTE} with the lines marked "promote" there, then update PROMOTE_SHA256 here)`,
        `sha256 ${digest}`,
      );
      const q = queue('fair');
      const worker = manualWorker('fair');
      await q.add('plain', DATA, { jobId: 'plain', delay: PARK_DELAY_MS });
      await q.add('urgent', DATA, { jobId: 'urgent', delay: PARK_DELAY_MS, priority: 3 });
      await park(connection, prefix, q.name, 'alice', 0, [{ id: 'plain', priority: 0 }, { id: 'urgent', priority: 3 }]);
      // The first is released at once (BullMQ held none waiting), the other stays delayed.
      const states = await Promise.all(['plain', 'urgent'].map((id) => q.getJobState(id)));
      assume(JSON.stringify(states) === '["waiting","delayed"]', 'a job added with a delay is in the delayed set; a released one is waiting', JSON.stringify(states));
      const first = await take(worker, 'f1');
      assume(first?.id === 'plain', 'a worker takes the released job', String(first?.id));
      assume((await take(worker, 'f2')) === undefined, 'a worker never takes a parked job (delayed a year)', 'it took one');
      await first.moveToCompleted('done', 'f1', false);
      assume(Boolean((await q.getJob('plain'))?.finishedOn), "BullMQ sets finishedOn when it completes a job (settle reads it)", 'no finishedOn');
      await settle(connection, prefix, q.name, 'alice', ['plain']);
      assume((await q.getJobState('urgent')) === 'prioritized', "a released job with a priority goes to BullMQ's prioritized set, as promote puts it", String(await q.getJobState('urgent')));
      const second = await take(worker, 'f2');
      assume(second?.id === 'urgent' && Number(await connection.hget(q.toKey('urgent'), 'delay')) === 0, 'a worker takes the released prioritized job, its delay 0 as after promote', String(second?.id));
      const events = (await connection.xrange(bullKey(prefix, q.name, 'events'), '-', '+')).map(([, fields]) => fields.join(' ')).filter((e) => e.includes('prev delayed'));
      assume(events.length === 2, "a release adds promote's 'waiting' event (prev delayed)", JSON.stringify(events));
      await second.moveToFailed(new Error('final'), 'f2', false);
      assume(Boolean((await q.getJob('urgent'))?.finishedOn), 'BullMQ sets finishedOn when a job fails for good', 'no finishedOn');
      // Nobody settled it: heal does.
      await heal(connection, prefix, q.name);
      const shares = await callerShares(connection, prefix, q.name);
      assume(JSON.stringify(shares) === JSON.stringify([{ caller: 'alice', waiting: 0, running: 0, concurrency: 0 }]), 'every count is back to 0', JSON.stringify(shares));
      assume((await release(connection, prefix, q.name)) === 0, 'nothing is left to release', 'released one');
    });
  });

  describe('ioredis, as libs/redis/src/cork.ts uses it (coalesceWrites)', () => {
    it("sends every command, BullMQ's scripts included, through sendCommand, writing it to redis.stream, the socket", async () => {
      const client = new IORedis(url, { maxRetriesPerRequest: null });
      closers.push(async () => client.disconnect());
      await client.ping();
      const sent: string[] = [];
      const send = client.sendCommand.bind(client);
      client.sendCommand = (command, stream) => {
        sent.push(command.name);
        return send(command, stream);
      };
      coalesceWrites(client);
      const socket = client.stream;
      let writes = 0;
      for (const name of ['_write', '_writev'] as const) {
        const original = (socket as unknown as Record<string, (...args: unknown[]) => void>)[name].bind(socket);
        (socket as unknown as Record<string, (...args: unknown[]) => void>)[name] = (...args) => {
          writes++;
          original(...args);
        };
      }
      const q = new Queue<JobData, unknown, string>('cork', { connection: client, prefix: queuePrefix(prefix, 'cork') });
      closers.push(() => q.close());
      await q.waitUntilReady();
      sent.length = 0;
      writes = 0;
      await Promise.all([client.set(`${prefix}:cork`, '1'), q.add('t', DATA, { jobId: 'corked' })]);
      assume(
        socket instanceof Socket && sent.includes('set') && sent.some((name) => name === 'evalsha' || name === 'eval') && writes === 1,
        'ioredis sends every command, a Queue.add script too, through the instance method sendCommand, and writes it to redis.stream, a net.Socket: commands sent in one turn leave in one write once cork.ts corks it',
        `stream is ${socket?.constructor.name}; sent ${sent.join(',')}; ${writes} writes`,
      );
    });
  });

  describe('ioredis, as libs/redis/src/reply-deadline.ts uses it (failUnansweredAfter)', () => {
    it('keeps the commands awaiting a reply in commandQueue, oldest first, each a command whose reject fails its promise', async () => {
      const client = new IORedis(url, { maxRetriesPerRequest: null });
      closers.push(async () => client.disconnect());
      await client.ping();
      type Queue = { length: number; peekFront(): { command: { name: string; reject(error: Error): void } } | undefined; toArray(): Array<{ command: { name: string } }> };
      const queue = () => (client as unknown as { commandQueue: Queue }).commandQueue;
      // Sent in one turn: none is answered before the look below.
      const echoed = client.echo('first');
      const got = client.get(`${prefix}:deadline`);
      const names = queue().toArray().map((item) => item.command.name);
      const front = queue().peekFront();
      front?.command.reject(new Error('Command timed out'));
      const first = await echoed.then(
        () => 'answered',
        (error: Error) => error.message,
      );
      await got;
      assume(
        names.join(',') === 'echo,get' && first === 'Command timed out',
        "ioredis keeps a connection's commands awaiting a reply in redis.commandQueue (peekFront, toArray), oldest first, as { command }, and command.reject fails the command's promise; a late reply settles nothing",
        `queue ${names.join(',')}; the first command ${first}`,
      );
    });
  });
});
