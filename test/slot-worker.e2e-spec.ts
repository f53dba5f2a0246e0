import { Queue } from 'bullmq';
import IORedis from 'ioredis';
import { type JobData, queuePrefix } from '@app/queue';
import { type QueueJob, SlotWorker } from '../apps/worker/src/processor/slot-worker';
import { Slots } from '../apps/worker/src/processor/slots';
import { uniquePrefix } from './support/apps';
import { waitFor } from './support/wait';

/**
 * The worker's pool slots, shared by the BullMQ Workers of every queue it consumes, against a real
 * Redis: jobs of two queues flowing at once through two slots all complete, however BullMQ's
 * fetch-next chaining and the slot waits interleave.
 *
 * This pins the cause of test/chaos/redis-late's stall: BullMQ's `moveToFinished` fetches the next
 * job and moves it to active in the same script when the slot looked free of waiters; if a fetch of
 * the same Worker then started waiting for a slot, BullMQ's main loop sat on that fetch while the
 * chained job waited in its queue for that same loop, holding the slot the fetch waited for. With
 * one chain per queue, both slots were held by jobs nobody ran: jobs stayed `active` at progress 0
 * with the worker idle (the stall report showed `jobs_active 0` beside one active job per queue).
 */
describe('SlotWorker: queues sharing the pool slots', () => {
  const url = process.env.E2E_REDIS_URL!;
  const connection = new IORedis(url, { maxRetriesPerRequest: null });
  const queues: Queue[] = [];
  const workers: SlotWorker[] = [];

  afterAll(async () => {
    await Promise.all(workers.map((w) => w.close(true)));
    await Promise.all(queues.map((q) => q.obliterate({ force: true }).then(() => q.close())));
    connection.disconnect();
  });

  it.each([
    [2, 2],
    [1, 2],
    [3, 3],
  ])('%i slot(s), %i queues: runs every job of every queue, never holding more jobs than slots', async (size, queueCount) => {
    const prefix = uniquePrefix(`slot-worker-${size}-${queueCount}`);
    const names = Array.from({ length: queueCount }, (_, i) => `q${i}`);
    const slots = new Slots(size);
    let running = 0;
    let most = 0;
    const done = new Set<string>();
    for (const name of names) {
      queues.push(new Queue<JobData, unknown, string>(name, { connection, prefix: queuePrefix(prefix, name) }));
      workers.push(
        new SlotWorker(
          name,
          async (job: QueueJob) => {
            most = Math.max(most, ++running);
            // why a few ms: long enough for another queue's fetch to start waiting for a slot while
            // this job completes, which is when BullMQ chains the next job onto it.
            await new Promise((resolve) => setTimeout(resolve, 1 + (Number(job.data.inputJson) % 3)));
            running--;
            done.add(`${name}:${job.id}`);
            return null;
          },
          { connection, prefix: queuePrefix(prefix, name), drainDelay: 1 },
          slots,
        ),
      );
    }
    const perQueue = 200;
    const data = (i: number): JobData => ({ inputJson: String(i), version: 1, key: `k${i}` });
    const mine = queues.slice(-queueCount);
    await Promise.all(mine.map((queue) => queue.addBulk(Array.from({ length: perQueue }, (_, i) => ({ name: 'job', data: data(i) })))));

    await waitFor(() => done.size === queueCount * perQueue, {
      timeoutMs: 20_000,
      what: () => `every job done (${done.size} of ${queueCount * perQueue}; slots in use ${slots.inUse}, waiting ${slots.waiting}, running ${running})`,
    });
    expect(most).toBeLessThanOrEqual(size);
    await waitFor(() => slots.inUse === 0, { what: 'every slot given back' });
  }, 40_000);
});
