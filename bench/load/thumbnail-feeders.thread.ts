import { Agent, request } from 'node:http';
import { parentPort, workerData } from 'node:worker_threads';
import { distinct, sendMultipart } from './uploads';

/** What the feeding thread is given (see ThumbnailFeeders). */
export interface FeedOptions {
  /** Where a thumbnail is submitted: POST /v1/jobs/{type}. */
  submit: string;
  /** Headers of every request (the API key). */
  headers: Record<string, string>;
  /** The JPEG each submission sends, made distinct per job (distinct()). */
  image: Uint8Array;
  /** The type's file part, and its JSON input. */
  part: string;
  input: unknown;
  /** Callers at once, each submitting its next thumbnail once it has downloaded the last. */
  callers: number;
  /** Tags the images apart from every other run's (distinct()). */
  tag: string;
}

/** Messages to the scenario: one thumbnail fed, all callers stopped, or what failed. */
export type FeedMessage = { fed: 1 } | { done: true } | { error: string };

const o = workerData as FeedOptions;
const image = Buffer.from(o.image.buffer, o.image.byteOffset, o.image.byteLength);
const agent = new Agent({ keepAlive: true });
let feeding = true;
let serial = 0;
parentPort!.on('message', (message) => {
  if (message === 'stop') feeding = false;
});
const post = (message: FeedMessage) => parentPort!.postMessage(message);

/** One caller: submits a thumbnail with Prefer: wait, downloads it, and again, until told to stop. */
async function feed(): Promise<void> {
  while (feeding) {
    const chunks = distinct(image, `${o.tag} ${++serial}`);
    const file = { part: o.part, filename: 'image.jpg', contentType: 'image/jpeg', bytes: chunks.reduce((n, c) => n + c.length, 0), chunks };
    const reply = await sendMultipart(new URL(o.submit), { ...o.headers, prefer: 'wait=60' }, o.input, file, 120_000);
    const view = JSON.parse(reply.text) as { status?: string; files?: Array<{ url: string }> };
    if (view.status !== 'completed' || !view.files?.[0]) throw new Error(`thumbnail: HTTP ${reply.status}, ${reply.text.slice(0, 300)}`);
    await download(new URL(view.files[0].url, o.submit));
    post({ fed: 1 });
  }
}

function download(url: URL): Promise<void> {
  return new Promise((resolve, reject) => {
    request(url, { headers: o.headers, agent }, (res) => {
      res.resume();
      res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`thumbnail download: HTTP ${res.statusCode}`))));
      res.on('error', reject);
    })
      .on('error', reject)
      .end();
  });
}

Promise.all(Array.from({ length: o.callers }, feed)).then(
  () => {
    agent.destroy();
    post({ done: true });
  },
  (error: unknown) => post({ error: error instanceof Error ? (error.stack ?? error.message) : String(error) }),
);
