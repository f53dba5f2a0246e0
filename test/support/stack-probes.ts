import { queueKeys } from '@app/queue';
import type { AppProcess } from './apps';
import { getJob, readEvents, request, submit } from './http';
import type { RedisNode } from './redis-ha';
import { waitFor } from './wait';

let unique = 0;

/** Keys of `node` that match `pattern` (SCAN, so a test may look without KEYS). */
export async function keysMatching(node: RedisNode, pattern: string): Promise<string[]> {
  return node.client(async (c) => {
    const keys: string[] = [];
    let cursor = '0';
    do {
      const [next, found] = await c.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      keys.push(...found);
      cursor = next;
    } while (cursor !== '0');
    return keys;
  });
}

/**
 * What a user of the stack relies on, checked through `api` with a worker behind it: a job completes
 * (Prefer: wait), a running job's event stream ends with `completed`, DELETE aborts a running job
 * (the cancel channel reaches the worker), and a repeated submission is answered from the result
 * cache, whose entries live in `cache` and not in `queue`. Needs CHAOS_JOBS and, so a hit cannot
 * come from the API's memory, CACHE_MEMORY_MB=0.
 */
export async function expectStackWorks(api: AppProcess, { queue, cache, prefix }: { queue: RedisNode; cache: RedisNode; prefix: string }): Promise<void> {
  const tag = `${process.pid}-${++unique}`;
  const input = { text: `probe-${tag}`, numbers: [3, 1, 2] };
  const first = await submit(api.url, 'echo', input, { wait: 10 });
  expect(first.body).toMatchObject({ status: 'completed', result: { ...input, choice: 'a' } });

  const streamed = await submit(api.url, 'chaos', { mode: 'spin', ms: 300, tag });
  const events = await readEvents(`${api.url}/v1/jobs/${streamed.body.id}/events`);
  expect(events.at(-1)).toMatchObject({ event: 'completed', data: { status: 'completed' } });

  const spin = await submit(api.url, 'chaos', { mode: 'spin', ms: 30_000, tag });
  await waitFor(async () => (await getJob(api.url, spin.body.id)).body.status === 'active', { what: 'the spin job active' });
  const cancelled = await request(`${api.url}/v1/jobs/${spin.body.id}`, { method: 'DELETE' });
  expect(cancelled.body).toMatchObject({ status: 'cancelled', error: { code: 'JOB_CANCELLED' } });

  const again = await submit(api.url, 'echo', input);
  expect(again.body).toMatchObject({ status: 'completed', cached: true });
  expect(await keysMatching(cache, queueKeys(prefix).cacheEntry('*'))).not.toEqual([]);
  expect(await keysMatching(queue, queueKeys(prefix).cacheEntry('*'))).toEqual([]);
}
