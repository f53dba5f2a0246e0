import type { OutputInfo, Sharp, SharpInput, SharpOptions } from 'sharp';
import { z } from 'zod';
import { defineJob } from './define-job';
import { CodedJobError, JobFailureCode } from './job-failure';

/** The largest image `thumbnail` takes. */
export const THUMBNAIL_MAX_BYTES = 32 * 1024 * 1024;
/**
 * The most pixels an image may have (8192 × 8192, a 67-megapixel photo). why: a few kilobytes of
 * PNG or GIF can declare billions of pixels (a decompression bomb); the decoder refuses more than
 * this before it allocates them, and the job fails at once with the image's size (JOB_REJECTED).
 */
export const THUMBNAIL_MAX_PIXELS = 8192 * 8192;

const FORMATS = { webp: 'image/webp', avif: 'image/avif', jpeg: 'image/jpeg', png: 'image/png' } as const;
const EXTENSIONS = { webp: 'webp', avif: 'avif', jpeg: 'jpg', png: 'png' } as const;

/** sharp's constructor and the settings used here. why spelled out: sharp's ESM typings, which this build resolves, declare no default export. */
interface SharpModule {
  (input: SharpInput, options?: SharpOptions): Sharp;
  concurrency(threads: number): number;
  cache(enabled: boolean): unknown;
}

let loaded: SharpModule | undefined;

function loadSharp(): SharpModule {
  if (loaded) return loaded;
  // why here, not an import at the top: the API and the worker's main thread load every job file,
  // but only pool threads resize (the worker's main thread loads sharp first: nativeModules).
  const sharp = require('sharp') as SharpModule;
  // why one libvips thread per run: the pool already runs one job per thread on every core; more
  // threads per job would only make jobs compete. why no cache: each image is one job's, read once.
  sharp.concurrency(1);
  sharp.cache(false);
  return (loaded = sharp);
}

/**
 * Makes a thumbnail of an image with sharp (libvips): `width` pixels wide, the height keeping the
 * aspect ratio, turned upright by its EXIF orientation, in `format`. The image is read from the
 * blob store on the pool thread (by its path in a file store); an image that cannot be decoded, or
 * has more than THUMBNAIL_MAX_PIXELS pixels, fails at once as JOB_REJECTED: it would never succeed.
 */
export const thumbnail = defineJob({
  name: 'thumbnail',
  version: 1,
  description: `Resizes an image to \`width\` pixels wide (the height keeps its aspect ratio) in \`format\`. Takes a file \`image\` (PNG, JPEG, WebP, AVIF, GIF or TIFF, at most 32 MB and ${THUMBNAIL_MAX_PIXELS} pixels); returns the thumbnail as the file \`thumbnail.<format>\` (jpeg: \`.jpg\`) and its size.`,
  input: z.strictObject({
    width: z.int().min(1).max(4096),
    format: z.enum(['webp', 'avif', 'jpeg', 'png']).default('webp'),
  }),
  output: z.object({ width: z.int(), height: z.int(), format: z.enum(['webp', 'avif', 'jpeg', 'png']) }),
  files: { image: { maxBytes: THUMBNAIL_MAX_BYTES, accept: ['image/png', 'image/jpeg', 'image/webp', 'image/avif', 'image/gif', 'image/tiff'] } },
  returnsFiles: true,
  nativeModules: ['sharp'],
  timeoutMs: 30_000,
  cacheTtlSeconds: 24 * 3600,
  run: async ({ width, format }, ctx) => {
    const sharp = loadSharp();
    const image = ctx.files!.image;
    const source = image.path ?? (await image.read());
    let made: { data: Buffer; info: OutputInfo };
    try {
      const options = { limitInputPixels: THUMBNAIL_MAX_PIXELS };
      // why ask first: the header says the size, so a bomb is refused naming it, before any decoding.
      const { width: w = 0, height: h = 0 } = await sharp(source, { ...options, limitInputPixels: false }).metadata();
      if (w * h > THUMBNAIL_MAX_PIXELS) throw new Error(`the image is ${w} × ${h} pixels, more than the ${THUMBNAIL_MAX_PIXELS} thumbnail takes`);
      const pipeline = sharp(source, options).rotate().resize({ width });
      made = await (format === 'jpeg' ? pipeline.flatten({ background: '#ffffff' }) : pipeline).toFormat(format).toBuffer({ resolveWithObject: true });
    } catch (error) {
      throw new CodedJobError(JobFailureCode.JOB_REJECTED, `thumbnail: ${error instanceof Error ? error.message : String(error)}`);
    }
    // Outside the try: a store that fails here fails the attempt, which retries (the image stays stored).
    await ctx.writeFile!(`thumbnail.${EXTENSIONS[format]}`, made.data, FORMATS[format]);
    return { width: made.info.width, height: made.info.height, format };
  },
});
