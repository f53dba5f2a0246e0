import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { FileSink, SINK_BATCH_BYTES } from './file-sink';

describe('FileSink', () => {
  const dir = mkdtempSync(join(tmpdir(), 'file-sink-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** The files this process holds open (Linux: /proc/self/fd). */
  function openFiles(): string[] {
    return readdirSync('/proc/self/fd').flatMap((fd) => {
      try {
        return [readlinkSync(`/proc/self/fd/${fd}`)];
      } catch {
        return []; // closed meanwhile
      }
    });
  }

  /** `bytes` cut into chunks of the given sizes, over and over. */
  function chunked(bytes: Buffer, sizes: number[]): Buffer[] {
    const chunks: Buffer[] = [];
    for (let at = 0, i = 0; at < bytes.length; i++) {
      const size = sizes[i % sizes.length];
      chunks.push(bytes.subarray(at, at + size));
      at += size;
    }
    return chunks;
  }

  it.each([
    ['socket reads of 64 KB', 3 * SINK_BATCH_BYTES + 12_345, [64 * 1024]],
    ['chunks of every size, empty ones among them', 2 * SINK_BATCH_BYTES + 1, [1, 0, 7_777, SINK_BATCH_BYTES + 3, 65_536]],
    ['whole batches exactly', 2 * SINK_BATCH_BYTES, [SINK_BATCH_BYTES]],
    ['less than one batch', 1_000, [100]],
    ['nothing', 0, [1]],
  ])('writes the bytes as they came: %s', async (_name, size, sizes) => {
    const bytes = randomBytes(size);
    const path = join(dir, `file-${size}`);
    // Two files at once: each has a batch of its own.
    await Promise.all([
      pipeline(Readable.from(chunked(bytes, sizes)), new FileSink(path)),
      pipeline(Readable.from(chunked(bytes, [...sizes].reverse())), new FileSink(`${path}-2`)),
    ]);
    expect(readFileSync(path).equals(bytes)).toBe(true);
    expect(readFileSync(`${path}-2`).equals(bytes)).toBe(true);
  });

  it('closes its file when the stream fails; a later file reusing its batch gets its own bytes only', async () => {
    const path = join(dir, 'failed');
    const failing = Readable.from(
      (async function* () {
        yield Buffer.alloc(SINK_BATCH_BYTES + 10, 1);
        throw new Error('the client went away');
      })(),
    );
    await expect(pipeline(failing, new FileSink(path))).rejects.toThrow('the client went away');
    expect(openFiles()).not.toContain(path);
    const after = randomBytes(SINK_BATCH_BYTES - 5);
    await pipeline(Readable.from([after]), new FileSink(join(dir, 'after')));
    expect(readFileSync(join(dir, 'after')).equals(after)).toBe(true);
  });

  it('closes its file when destroyed while a write is under way; later files get their own bytes only', async () => {
    const sink = new FileSink(join(dir, 'destroyed'));
    const closed = new Promise((resolve) => sink.on('close', resolve));
    sink.on('error', () => undefined);
    // One byte first: its callback says the file is open.
    await new Promise((resolve) => sink.write(Buffer.alloc(1, 7), resolve));
    sink.write(Buffer.alloc(SINK_BATCH_BYTES - 1, 7)); // the batch is full: its write starts now
    sink.destroy(new Error('the client went away'));
    await closed;
    expect(sink.errored?.message).toBe('the client went away');
    expect(openFiles()).not.toContain(join(dir, 'destroyed'));
    // Later files, written while that batch's write may still be running, get their own bytes only.
    const later = [randomBytes(SINK_BATCH_BYTES - 1), randomBytes(SINK_BATCH_BYTES + 1)];
    await Promise.all(later.map((bytes, i) => pipeline(Readable.from([bytes]), new FileSink(join(dir, `later-${i}`)))));
    later.forEach((bytes, i) => expect(readFileSync(join(dir, `later-${i}`)).equals(bytes)).toBe(true));
  });

  it('fails when its file cannot be made', async () => {
    await expect(pipeline(Readable.from([Buffer.from('x')]), new FileSink(join(dir, 'no', 'such', 'dir', 'file')))).rejects.toThrow(/ENOENT/);
  });
});
