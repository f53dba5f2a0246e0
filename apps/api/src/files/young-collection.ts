import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** Upload bytes between two collections of V8's young generation: a quarter of the 64 MB below. */
export const YOUNG_COLLECTION_BYTES = 16 * 1024 * 1024;

let collect: ((options: { type: 'minor' }) => void) | undefined;
let since = 0;

/**
 * Counts `bytes` of an upload passed on to the store, and collects V8's young generation (a
 * scavenge, ~0.5 ms) each YOUNG_COLLECTION_BYTES. why: every socket read of a request's body is a
 * new Buffer outside V8's heap, and once 64 MB of those pile up since the last collection V8 marks
 * the whole heap (external memory pressure): ~20 ms of CPU on the API's ~32 MB heap, 7 of them for
 * 8 uploads of 50 MB, up to 0.7 ms a MB (bench/tuning/uploads.ts: the API's collector threads 0.65–0.88
 * ms a MB in such rounds, 0.13–0.15 with this), where the bare route's few MB of heap make the same
 * marks cheap. The buffers of bytes already written are garbage in the young generation, but the
 * API allocates too little else on its heap while it uploads for a scavenge to come first.
 */
export function uploaded(bytes: number): void {
  since += bytes;
  if (since < YOUNG_COLLECTION_BYTES) return;
  since = 0;
  collect ??= collector();
  collect({ type: 'minor' });
}

/**
 * V8's `gc`, without a flag on the command line nor a `gc` global: --expose-gc holds for the one
 * context made while it is set. why a fallback: Node warns that a flag set after start-up may do
 * nothing; a Node where this no longer works uploads as before, with V8's own collections, rather
 * than failing.
 */
function collector(): (options: { type: 'minor' }) => void {
  setFlagsFromString('--expose-gc');
  try {
    const gc = runInNewContext('typeof gc === "function" ? gc : undefined') as ((options: { type: 'minor' }) => void) | undefined;
    return gc ?? (() => undefined);
  } finally {
    if (!process.execArgv.includes('--expose-gc')) setFlagsFromString('--no-expose-gc');
  }
}
