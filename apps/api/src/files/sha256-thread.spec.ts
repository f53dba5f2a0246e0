import { createHash, randomBytes } from 'node:crypto';
import type { Worker } from 'node:worker_threads';
import { Sha256Thread, type ThreadSha256 } from './sha256-thread';

const MiB = 1024 * 1024;
const expected = (data: Buffer) => createHash('sha256').update(data).digest('hex');

/** Feeds `data` in chunks of the given sizes (cycled), waiting whenever the hash is backlogged. */
async function feed(hash: ThreadSha256, data: Buffer, sizes: number[]): Promise<void> {
  for (let offset = 0, i = 0; offset < data.length; i++) {
    const n = Math.min(sizes[i % sizes.length], data.length - offset);
    hash.update(data.subarray(offset, offset + n));
    offset += n;
    if (hash.backlogged) await hash.drained();
  }
}

describe('Sha256Thread', () => {
  let hashes: Sha256Thread;
  beforeEach(() => (hashes = new Sha256Thread()));
  afterEach(() => hashes.onApplicationShutdown());

  it('gives the digest node:crypto gives, whatever the chunking (empty, inside a batch, across batches)', async () => {
    for (const [bytes, sizes] of [
      [0, [1]],
      [1, [1]],
      [65_536, [65_536]],
      [MiB, [MiB]],
      [MiB + 1, [7, 65_536, 300_001]],
      [9 * MiB + 13, [3 * MiB + 5, 17]],
    ] as Array<[number, number[]]>) {
      const data = randomBytes(bytes);
      const hash = hashes.hash();
      await feed(hash, data, sizes);
      await expect(hash.digest()).resolves.toBe(expected(data));
    }
  });

  it('keeps hashes apart when their batches interleave, and a dropped one takes no other down', async () => {
    const files = Array.from({ length: 6 }, (_, i) => randomBytes(2 * MiB + i * 4099));
    const running = files.map(() => hashes.hash());
    const dropped = hashes.hash();
    dropped.update(randomBytes(3 * MiB));
    dropped.drop();
    for (let offset = 0; offset < 3 * MiB; offset += 64 * 1024) {
      running.forEach((hash, i) => hash.update(files[i].subarray(offset, offset + 64 * 1024)));
      await Promise.all(running.map((hash) => hash.drained()));
    }
    await expect(Promise.all(running.map((hash) => hash.digest()))).resolves.toEqual(files.map(expected));
    await expect(dropped.digest()).rejects.toThrow('dropped');
  });

  it('holds back a file the thread is behind on: 4 of its batches (1 MiB) at the thread at most', async () => {
    const hash = hashes.hash();
    const data = randomBytes(5 * MiB);
    hash.update(data.subarray(0, MiB));
    expect(hash.backlogged).toBe(true);
    await hash.drained();
    expect(hash.backlogged).toBe(false);
    hash.update(data.subarray(MiB));
    await hash.drained();
    await expect(hash.digest()).resolves.toBe(expected(data));
  });

  it('holds back every file once 64 batches (16 MiB) of all of them are at the thread', async () => {
    const files = Array.from({ length: 16 }, () => randomBytes(MiB));
    const running = files.map((data) => {
      const hash = hashes.hash();
      hash.update(data);
      return hash;
    });
    const late = hashes.hash();
    expect(late.backlogged).toBe(true);
    await late.drained();
    expect(late.backlogged).toBe(false);
    const data = randomBytes(3 * MiB);
    await feed(late, data, [65_536]);
    await expect(Promise.all([...running, late].map((hash) => hash.digest()))).resolves.toEqual([...files, data].map(expected));
  });

  it('fails the hashes of a thread that died, and hashes the next file on a new one', async () => {
    const hash = hashes.hash();
    hash.update(randomBytes(2 * MiB));
    const digest = hash.digest();
    await (hashes as unknown as { thread: { worker: Worker } }).thread.worker.terminate();
    await expect(digest).rejects.toThrow(/hashing thread exited/);
    const data = randomBytes(MiB + 3);
    const next = hashes.hash();
    await feed(next, data, [65_536]);
    await expect(next.digest()).resolves.toBe(expected(data));
  });
});
