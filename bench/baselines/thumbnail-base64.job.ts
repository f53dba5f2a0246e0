import type { OutputInfo, Sharp, SharpInput, SharpOptions } from 'sharp';
import { z } from 'zod';
import { defineJob } from '../../libs/jobs/src/define-job';

/** The most pixels an image may have, as the template's image type allows (8192 × 8192). */
const MAX_PIXELS = 8192 * 8192;

/** The largest image the peer takes, as the template's type does (32 MB); its base64 is a third larger. */
const MAX_BASE64_CHARS = Math.ceil((32 * 1024 * 1024) / 3) * 4;

/**
 * The conventional peer's thumbnail (the files scenario; the template's side is its image type,
 * options.ts imageJob()): the image travels base64 in the JSON body
 * and in the BullMQ job data, and the thumbnail comes back base64 in the job's return value, as the
 * usual first attempt does (taskforcesh/bullmq#2397). The run decodes the base64 and resizes with
 * sharp as the template's type does (same options, same pixel limit), on the peer worker's event loop (sharp
 * itself works on libuv's threads, with its default concurrency: one libvips thread per core).
 * Registered only in the baselines' registry (baseline-jobs.ts), never in the template's apps.
 */
export const thumbnailBase64 = defineJob({
  name: 'thumbnail-base64',
  version: 1,
  description: 'The peer of the template\'s image type: `image` base64 in the input, the thumbnail base64 in the result.',
  input: z.strictObject({
    // why not z.base64(): checking 7 MB of base64 costs about what decoding it does; the peer gets the cheaper path.
    image: z.string().min(1).max(MAX_BASE64_CHARS),
    width: z.int().min(1).max(4096),
    format: z.enum(['webp', 'avif', 'jpeg', 'png']).default('webp'),
  }),
  output: z.object({ width: z.int(), height: z.int(), format: z.string(), thumbnail: z.string() }),
  timeoutMs: 30_000,
  cacheTtlSeconds: 60,
  run: async ({ image, width, format }) => {
    const sharp = require('sharp') as (input: SharpInput, options?: SharpOptions) => Sharp;
    const source = Buffer.from(image, 'base64');
    const { width: w = 0, height: h = 0 } = await sharp(source, { limitInputPixels: false }).metadata();
    if (w * h > MAX_PIXELS) throw new Error(`the image is ${w} × ${h} pixels`);
    const pipeline = sharp(source, { limitInputPixels: MAX_PIXELS }).rotate().resize({ width });
    const made: { data: Buffer; info: OutputInfo } = await (format === 'jpeg' ? pipeline.flatten({ background: '#ffffff' }) : pipeline)
      .toFormat(format)
      .toBuffer({ resolveWithObject: true });
    return { width: made.info.width, height: made.info.height, format, thumbnail: made.data.toString('base64') };
  },
});
