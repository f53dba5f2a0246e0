import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import type { Queue } from 'bullmq';
import type * as NewJobModule from '../../apps/api/src/jobs/new-job';
import { canonicalJson, contentKey } from '../../libs/jobs/src/content-key';
import type { JobDefinition } from '../../libs/jobs/src/define-job';

/**
 * Adds `count` jobs of `def` straight to its BullMQ queue, `chunk` per addBulk, with the data and
 * options the API gives a POST (newJob: the same function the API calls, a fresh id and request id,
 * the content key as deduplication id). why not over HTTP: a million POSTs take minutes; the queue
 * holds the same thing either way. `input(i)` must give distinct inputs (equal ones are one job).
 * why newJob from `options.dist`: it is the build under test, and its `@app/*` imports are resolved
 * there (bench/.build's copy of the sources keeps them as they are).
 */
export async function fillQueue(
  queue: Queue,
  def: JobDefinition,
  count: number,
  input: (i: number) => unknown,
  options: { chunk: number; retentionSeconds: number; dist: string },
): Promise<void> {
  const { newJob } = require(join(options.dist, 'apps', 'api', 'src', 'jobs', 'new-job.js')) as typeof NewJobModule;
  // why one addBulk in flight while the next chunk is built: Redis runs one while Node prepares the other.
  let adding: Promise<unknown> = Promise.resolve();
  for (let start = 0; start < count; start += options.chunk) {
    const jobs = [];
    for (let i = start; i < Math.min(count, start + options.chunk); i++) {
      const inputJson = canonicalJson(def.input.parse(input(i)));
      const prepared = { def, inputJson, key: contentKey(def, inputJson) };
      jobs.push(newJob(prepared, randomUUID(), { requestId: randomUUID() }, options.retentionSeconds));
    }
    await adding;
    adding = queue.addBulk(jobs);
  }
  await adding;
}
