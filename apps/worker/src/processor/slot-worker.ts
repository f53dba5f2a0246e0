import { Job, Processor, Worker, WorkerOptions } from 'bullmq';
import type { JobData } from '@app/queue';
import { Slots } from './slots';

export type QueueJob = Job<JobData, unknown, string>;

/**
 * A BullMQ Worker for one queue that takes a job only while it holds one of the pool's slots, which
 * every queue of this process shares: however many queues a worker consumes, it holds at most as
 * many jobs as it has threads, and a job it cannot run yet stays in Redis for other replicas.
 *
 * why here: BullMQ fetches a job in `moveToActive`, after waiting for one to arrive; taking the slot
 * just before that call means an idle queue never holds a slot while it waits. A slot belongs to the
 * fetch token: when BullMQ chains the next job onto a finished one (same token), the slot goes with
 * it, and it is given back when the token's chain ends.
 */
export class SlotWorker extends Worker<JobData, unknown, string> {
  private readonly holding = new Set<string>();

  constructor(
    queue: string,
    processor: Processor<JobData, unknown, string>,
    options: WorkerOptions,
    private readonly slots: Slots,
  ) {
    super(queue, processor, { ...options, concurrency: slots.size });
  }

  protected override async moveToActive(token: string, name?: string): Promise<QueueJob> {
    const inherited = this.holding.has(token);
    if (!inherited) {
      await this.slots.acquire();
      this.holding.add(token);
    }
    let job: QueueJob | undefined;
    try {
      // why check again: the wait for a slot may outlast the start of a shutdown.
      if (!this.closing) job = await super.moveToActive(token, name);
    } finally {
      if (!job && !inherited) this.giveBack(token);
    }
    return job!;
  }

  override async processJob(job: QueueJob, token: string, fetchNext: () => boolean = () => true): Promise<void | QueueJob> {
    let next: void | QueueJob = undefined;
    try {
      // why: while another queue waits for a slot, the slot goes back rather than to this queue's next job.
      next = await super.processJob(job, token, () => fetchNext() && this.slots.waiting === 0);
      return next;
    } finally {
      if (!next) this.giveBack(token);
    }
  }

  private giveBack(token: string): void {
    if (this.holding.delete(token)) this.slots.release();
  }
}
