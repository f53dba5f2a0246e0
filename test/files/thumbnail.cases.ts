import { crc32, deflateSync } from 'node:zlib';
import type { FileCases } from '../support/file-cases';

// why the cast: sharp's ESM typings, which this build resolves, declare no default export.
const sharp = require('sharp') as (input: Buffer | { create: { width: number; height: number; channels: 3; background: object } }) => import('sharp').Sharp;

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** A PNG whose header says `width` × `height` pixels, in a few hundred bytes: a decompression bomb. */
function pngBomb(width: number, height: number): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
    const length = Buffer.alloc(4);
    length.writeUInt32BE(data.length);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(body));
    return Buffer.concat([length, body, crc]);
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header[8] = 8; // 8-bit grey
  return Buffer.concat([PNG_SIGNATURE, chunk('IHDR', header), chunk('IDAT', deflateSync(Buffer.alloc(64 * 1024))), chunk('IEND', Buffer.alloc(0))]);
}

/** The example `thumbnail` (libs/jobs/src/thumbnail.job.ts), on the file suite's stacks. */
const thumbnailCases: FileCases = ({ post, download }) => {
  describe.each(['file', 's3'] as const)('thumbnail, with the %s store', (kind) => {
    it('makes a thumbnail of the width and format asked for, its file checked by decoding it', async () => {
      const format = kind === 'file' ? 'webp' : 'avif';
      const image = await sharp({ create: { width: 600, height: 400, channels: 3, background: { r: 40, g: 120, b: kind.length * 40 } } }).jpeg().toBuffer();
      const reply = await post(kind, 'thumbnail', { width: 150, format }, { image }, { prefer: 'wait=30' });
      expect([reply.status, reply.body.status, reply.body.result]).toEqual([200, 'completed', { width: 150, height: 100, format }]);
      const [file] = reply.body.files as Array<{ name: string; contentType: string; url: string; bytes: number }>;
      expect([file.name, file.contentType]).toEqual([`thumbnail.${format}`, `image/${format}`]);
      const thumb = await download(kind, file.url);
      const decoded = await sharp(thumb).metadata();
      expect([thumb.length, decoded.format, decoded.width, decoded.height]).toEqual([file.bytes, format === 'avif' ? 'heif' : format, 150, 100]);
    });
  });

  it('fails a decompression bomb at once, naming its size, without decoding it', async () => {
    const reply = await post('file', 'thumbnail', { width: 100 }, { image: pngBomb(40_000, 40_000) }, { prefer: 'wait=30' });
    expect([reply.status, reply.body.status, reply.body.attempts, reply.body.error]).toEqual([
      200,
      'failed',
      1,
      { code: 'JOB_REJECTED', message: `thumbnail: the image is 40000 × 40000 pixels, more than the ${8192 * 8192} thumbnail takes` },
    ]);
  });
};

export default thumbnailCases;
