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

  it('starts a lone job as soon as it is fetched: no second fetch answered first, though a slot is free', async () => {
    const prefix = uniquePrefix('slot-worker-lone');
    const queue = new Queue<JobData, unknown, string>('lone', { connection, prefix: queuePrefix(prefix, 'lone') });
    queues.push(queue);
    const events: string[] = [];
    const worker = new SlotWorker(
      'lone',
      async () => {
        events.push('started');
        return null;
      },
      { connection, prefix: queuePrefix(prefix, 'lone'), drainDelay: 5 },
      new Slots(2),
    );
    workers.push(worker);
    // What each of its fetches brought back from Redis (BullMQ's backend, which SlotWorker's moveToActive calls).
    const backend = (worker as unknown as { backend: { moveToActive(...args: unknown[]): Promise<unknown[]> } }).backend;
    const fetch = backend.moveToActive.bind(backend);
    backend.moveToActive = async (...args) => {
      const reply = await fetch(...args);
      events.push(reply[0] ? 'fetched a job' : 'fetched nothing');
      return reply;
    };
    const idle = () => waitFor(() => (worker as unknown as { waiting: unknown }).waiting != null, { what: 'the worker waiting for a job' });
    // Idle as it is between lone jobs: one ran, and the worker waits for the next to arrive.
    await queue.add('job', { inputJson: '1', version: 1, key: 'k1' });
    await waitFor(() => events.includes('started'), { what: 'the first job started' });
    await idle();
    for (let i = 2; i <= 4; i++) {
      events.length = 0;
      await queue.add('job', { inputJson: String(i), version: 1, key: `k${i}` });
      await waitFor(() => events.includes('started'), { what: `job ${i} started` });
      // Before: BullMQ's loop sent a second fetch for the free slot and started the job on its empty answer.
      expect(events.slice(0, events.indexOf('started') + 1)).toEqual(['fetched a job', 'started']);
      await idle();
    }
  });
});
