import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Queue } from 'bullmq';
import IORedis from 'ioredis';
import type { Sharp, SharpOptions } from 'sharp';
import { FileBlobStore } from '../../libs/blobs/src/file-blob-store';
import type { JobDefinition } from '../../libs/jobs/src/define-job';
import { bullKey } from '../../libs/queue/src/queue.keys';
import type { AppProcess } from '../../test/support/apps';
import { keyHeader } from '../load/api-key';
import { blast } from '../load/blast';
import { ThumbnailFeeders } from '../load/thumbnail-feeders';
import { distinct, generated, sendMultipart, sendStream } from '../load/uploads';
import { closedLoop, HttpClient } from '../load/http-client';
import type { ScenarioReport } from '../report/report.types';
import { benchJobs } from '../support/bench-jobs';
import { imageJob } from '../support/options';
import { censusDelta, fieldsDelta, keyCensus, memoryUsage, readMemory } from '../support/redis-memory';
import { childrenOf, hostCpu, hostCpuShares, threadCpu } from '../support/host-cpu';
import { cpuMs, poolSaturated, redisServerPid, rssBytes, startNode } from '../support/stack';
import { schedCounters } from '../tuning/sched-counters';
import { Rounds } from '../support/stats';
import { BenchContext, rotate, Scenario, sleep } from './context';
import { filesReport } from './files.report';

/** The peer's queue (bench/baselines/peer.queue.ts). */
const PEER_QUEUE = 'peer-jobs';
/** Redis's zset-max-listpack-entries: a sorted set with more entries is a skip list. */
const ZSET_LISTPACK_ENTRIES = 128;
/** What every thumbnail of the scenario is: one width and format, so every job is the same work. */
const THUMB = { width: 640, format: 'jpeg' } as const;

interface View {
  id: string;
  status: string;
  files?: Array<{ url: string }>;
}

/** A test image: a JPEG of about `bytes` (noise tiles, ~0.47 B a pixel at quality 90: a photo's 4:3 and density). */
async function jpegOfAbout(bytes: number): Promise<{ data: Buffer; width: number; height: number }> {
  const sharp = require('sharp') as (input?: unknown, options?: SharpOptions) => Sharp;
  const tileOf = (width: number, height: number) =>
    sharp({ create: { width, height, channels: 3, background: '#000', noise: { type: 'gaussian', mean: 128, sigma: 20 } } })
      .png({ compressionLevel: 0 })
      .toBuffer();
  let pixels = bytes / 0.47;
  let made = { data: Buffer.alloc(0), width: 0, height: 0 };
  for (let i = 0; i < 3; i++) {
    const width = Math.max(16, Math.round(Math.sqrt((pixels * 4) / 3)));
    const height = Math.max(16, Math.round((width * 3) / 4));
    const data = await sharp({ create: { width, height, channels: 3, background: { r: 90, g: 140, b: 200 } } })
      .composite([{ input: await tileOf(Math.min(256, width), Math.min(256, height)), tile: true }])
      .jpeg({ quality: 90 })
      .toBuffer();
    made = { data, width, height };
    if (Math.abs(data.length - bytes) / bytes < 0.05) break;
    pixels *= bytes / data.length;
  }
  return made;
}

/**
 * 12. Files, the claim-check pattern against the usual first attempt, side by side:
 * - Redis bytes per finished `thumbnail` job (input + result, kept, and its cached result), for a
 *   small and a large image (used_memory deltas less the events stream, as in `cost`, and a census
 *   of the template's keys by MEMORY USAGE), against the
 *   conventional peer (baselines/peer-*: Nest + @nestjs/bullmq, `thumbnail-base64`: the image
 *   base64 in the JSON body and the job data, the thumbnail base64 in its return value);
 * - upload MB/s through the API (`bench-file`: multipart, streamed into the file store, hashed and
 *   sniffed on the way) against a bare Fastify route streaming the same bytes into the same store
 *   (baselines/bare-upload.main.ts), concurrent uploads; the API's RSS growth while more run at once;
 * - thumbnails/s of the large image (each client gets its thumbnail: the template's is downloaded
 *   from its URL) against the peer, whose Nest worker decodes the base64 and runs sharp itself;
 * - the API's GET /v1/jobs/{id} while large-image thumbnails are fed ÷ idle (the `isolation` measure).
 * Every image is made distinct per job (load/uploads.ts's distinct()), so no job is a cache hit or joins another.
 */
export class FilesScenario implements Scenario<ScenarioReport> {
  readonly name = 'files';
  private readonly rounds = new Rounds();
  private bare?: AppProcess;
  private images?: { small: { data: Buffer; width: number; height: number }; large: { data: Buffer; width: number; height: number } };
  private store?: FileBlobStore;
  private template?: HttpClient;
  private peer?: HttpClient;
  private peerQueue?: Queue;
  private connection?: IORedis;
  private pattern = randomBytes(1024 * 1024);
  private serial = 0;
  /** The peer's jobs not yet removed: each holds its image in Redis (see dropPeerJobs). */
  private peerJobs: string[] = [];
  private doneJobId?: string;
  private redisPid?: number;
  private readonly facts: Record<string, number> = {};
  /** The last round's census of each size: bytes per job by key family (see redisBytes). */
  private readonly census: Partial<Record<'small' | 'large', Record<string, number>>> = {};

  /** The template's image type (the `thumbnail` example: options.ts imageJob()). */
  private readonly image: JobDefinition;

  constructor(private readonly ctx: BenchContext) {
    const def = imageJob();
    if (!def) throw new Error('files: this build has no type that takes an image and returns files (the thumbnail example)');
    this.image = def;
  }

  /** The bare peer's prefix (run.ts starts it, shared with the peers scenario). */
  private get peerPrefix(): string {
    return `${this.ctx.prefix}-peer`;
  }

  /** The template's file store (a directory: BLOB_STORE_URL, set by run.ts). */
  private get storeDir(): string {
    const url = this.ctx.templateEnv.BLOB_STORE_URL;
    if (!url?.startsWith('file://')) throw new Error('files: the template runs without a file:// BLOB_STORE_URL (run.ts sets one)');
    return fileURLToPath(url);
  }

  async beginPass(): Promise<void> {
    if (this.bare) return;
    const { opts, redis, progress } = this.ctx;
    const o = opts.files;
    progress.log(`${this.name}: starting the bare upload route (and the bare peer, unless peers did); making ${o.smallBytes} and ${o.largeBytes} byte JPEGs`);
    const [peer, bare, small, large] = await Promise.all([
      this.ctx.sharedPeer(),
      startNode(join(__dirname, '..', 'baselines', 'bare-upload.main.js'), { BLOB_DIR: this.storeDir }, { cwd: opts.root }),
      jpegOfAbout(o.smallBytes),
      jpegOfAbout(o.largeBytes),
    ]);
    this.bare = bare;
    this.images = { small, large };
    this.facts.smallBytes = small.data.length;
    this.facts.largeBytes = large.data.length;
    progress.log(`${this.name}: images ${small.width} × ${small.height} (${small.data.length} B) and ${large.width} × ${large.height} (${large.data.length} B)`);
    this.store = new FileBlobStore(this.storeDir);
    this.template = new HttpClient(this.ctx.servers.api.url, 64);
    this.redisPid = await redisServerPid(this.ctx.redis, this.ctx.redisClient);
    this.peer = new HttpClient(peer.api.url, 64);
    this.connection = new IORedis(redis.url, { maxRetriesPerRequest: null });
    this.peerQueue = new Queue(PEER_QUEUE, { connection: this.connection, prefix: this.peerPrefix }).on('error', () => undefined);
    // Warm both sides (first sharp load, first multipart), and keep a finished job for the GET leg.
    this.doneJobId = (await this.thumbTemplate('small')).id;
    await this.thumbPeer('small');
    await this.dropPeerJobs();
    // why past 128 finished jobs before any Redis-bytes leg: the sorted sets a finished job joins
    // (BullMQ's completed set, the listing indexes, the files' leases) are listpacks up to 128
    // entries (zset-max-listpack-entries) and skip lists past them, as on any service past its first
    // hundred jobs; the leg that crossed the line would otherwise carry the conversion (the 5 MB leg,
    // which follows the 50 KB one).
    const completed = await this.ctx.redisClient.zcard(bullKey(this.ctx.prefix, this.image.queue, 'completed'));
    if (!this.ctx.opts.smoke && completed <= ZSET_LISTPACK_ENTRIES) {
      await closedLoop({ concurrency: 4, total: ZSET_LISTPACK_ENTRIES + 1 - completed, task: () => this.thumbTemplate('small') });
    }
  }

  /** One thumbnail through the template: the image uploaded (multipart), the job awaited, the thumbnail downloaded. */
  private async thumbTemplate(size: 'small' | 'large'): Promise<View> {
    const url = new URL(`/v1/jobs/${this.image.name}`, this.ctx.servers.api.url);
    const chunks = distinct(this.images![size].data, `bench ${++this.serial}`);
    const part = { part: Object.keys(this.image.files)[0], filename: 'image.jpg', contentType: 'image/jpeg', bytes: chunks.reduce((n, c) => n + c.length, 0), chunks };
    const reply = await sendMultipart(url, { ...keyHeader(url.href), prefer: 'wait=60' }, THUMB, part, 120_000);
    const view = JSON.parse(reply.text) as View;
    if (view.status !== 'completed' || !view.files?.[0]) throw new Error(`files: thumbnail: HTTP ${reply.status}, ${reply.text.slice(0, 300)}`);
    const file = await this.template!.send('GET', view.files[0].url);
    if (file.status !== 200) throw new Error(`files: thumbnail download: HTTP ${file.status}`);
    return view;
  }

  /** One thumbnail through the peer: the image base64 in the JSON body, the thumbnail base64 in the answer. */
  private async thumbPeer(size: 'small' | 'large'): Promise<void> {
    const image = Buffer.concat(distinct(this.images![size].data, `bench ${++this.serial}`)).toString('base64');
    const reply = await this.peer!.json<{ id: string; status: string; result?: { thumbnail?: string } }>('POST', '/v1/jobs/thumbnail-base64', {
      json: { image, ...THUMB },
      headers: { prefer: 'wait=60' },
      timeoutMs: 120_000,
    });
    if (reply.body?.id) this.peerJobs.push(reply.body.id);
    if (reply.body?.status !== 'completed' || !reply.body.result?.thumbnail) throw new Error(`files: peer thumbnail: HTTP ${reply.status}, ${JSON.stringify(reply.body).slice(0, 300)}`);
  }

  /**
   * Removes the peer's jobs of this scenario: each holds its image base64 in Redis until the peer's
   * retention (an hour). Only these: the peers scenario keeps a finished job of the same peer for its GETs.
   */
  private async dropPeerJobs(): Promise<void> {
    const ids = this.peerJobs.splice(0);
    for (const id of ids) await this.peerQueue!.remove(id);
  }

  async round(round: number, rounds: number): Promise<void> {
    const step = (what: string) => this.ctx.progress.step(this.name, round + 1, rounds, what);
    const o = this.ctx.opts.files;
    // why only the first round of a pass: bytes per job barely move between rounds, and the peer's large jobs are slow to fill.
    if (round % this.ctx.opts.roundsPerPass === 0) {
      for (const size of ['small', 'large'] as const) {
        step(`Redis bytes per thumbnail job, ${size} image: template, then the base64 peer`);
        await this.redisBytes(size);
      }
    }
    for (const side of rotate(['template', 'peer'] as const, round)) {
      step(`thumbnails/s of the large image: ${side}`);
      const t0 = performance.now();
      const run = await closedLoop({ concurrency: o.thumbCallers, total: o.thumbs, task: async () => void (side === 'template' ? await this.thumbTemplate('large') : await this.thumbPeer('large')) });
      if (run.errors.length > 0) throw new Error(`files: thumbnails (${side}): ${run.errors[0]}`);
      this.rounds.add(`thumbsPerS.${side}`, o.thumbs / ((performance.now() - t0) / 1000));
    }
    this.rounds.add('thumbsRatio', this.rounds.get('thumbsPerS.template').values.at(-1)! / this.rounds.get('thumbsPerS.peer').values.at(-1)!);
    await this.dropPeerJobs();
    await this.dropLargeObjects();

    for (const side of rotate(['template', 'bare'] as const, round)) {
      step(`${o.uploads} concurrent uploads of ${o.uploadBytes / 1024 ** 2} MB: ${side}`);
      this.rounds.add(`uploadMBps.${side}`, await this.uploads(side, o.uploads, o.uploadBytes));
    }
    this.rounds.add('uploadRatio', this.rounds.get('uploadMBps.template').values.at(-1)! / this.rounds.get('uploadMBps.bare').values.at(-1)!);

    step(`the API's RSS while ${o.rssUploads} uploads of ${o.rssUploadBytes / 1024 ** 2} MB run at once`);
    await this.rssGrowth();

    step(`GET /v1/jobs/{id} idle, then with ${o.feeders} callers of large-image thumbnails`);
    await this.isolation();
    await this.dropLargeObjects();
  }

  /**
   * Bytes Redis holds per finished thumbnail job of `size`, on each side (its events stream left out:
   * BullMQ caps it), two ways: `used_memory` deltas (the issue's `INFO memory`, as in `cost`), and on
   * the template's side a census of its keys (MEMORY USAGE of every key under its prefix, before and
   * after), which says where the bytes are and counts nothing outside the keys. why both: used_memory
   * also moves with what Redis holds outside the keys (a quiet-host run's 5 MB legs read 3,663 to
   * 24,086 B a job from it, with the slow log on), which the census leaves out.
   */
  private async redisBytes(size: 'small' | 'large'): Promise<void> {
    const redis = this.ctx.redisClient;
    if (!this.ctx.redis.own) return this.redisBytesOf(size);
    // why, as in `cost`: a command slower than 10 ms (a script preempted on 2 shared cores; the peer's
    // megabyte arguments) is copied into the slow log, up to 128 entries, at random moments.
    const [, slowlogMaxLen] = (await redis.config('GET', 'slowlog-max-len')) as [string, string];
    await redis.config('SET', 'slowlog-max-len', '0');
    await redis.call('SLOWLOG', 'RESET');
    try {
      await this.redisBytesOf(size);
    } finally {
      await redis.config('SET', 'slowlog-max-len', slowlogMaxLen);
    }
  }

  private async redisBytesOf(size: 'small' | 'large'): Promise<void> {
    const o = this.ctx.opts.files;
    const redis = this.ctx.redisClient;
    // why no settling pause in smoke mode: its numbers mean nothing, and 8 pauses would be most of its time.
    const settleMs = this.ctx.opts.smoke ? 0 : 150;
    /**
     * Bytes per job of `run` (a side's jobs, its keys under `own`): used_memory's delta less the
     * events stream's and less what keys of others (outside `own`) gained or lost meanwhile, and on
     * the template's side (`census`) a census of its keys by family.
     */
    const measure = async (jobs: number, events: string, run: () => Promise<unknown>, own: string, census: boolean) => {
      const inside = (all: Map<string, number>, yes: boolean) => new Map([...all].filter(([key]) => key.startsWith(`${own}:`) === yes));
      // why the census before each reading: its SCAN deletes the keys whose time is up but that Redis
      // has not reclaimed yet (it expires keys lazily, and actively only a little at a time), which
      // used_memory still counts and no census sees. Read before it, a full run's 50 KB leg came
      // right after the `cost` scenario and lost ~113,000 such keys meanwhile: −457 KB a job.
      const a0 = await keyCensus(redis, '*');
      const m0 = await readMemory(redis, settleMs);
      const e0 = await memoryUsage(redis, [events]);
      const result = await closedLoop({ concurrency: 4, total: jobs, task: run });
      if (result.errors.length > 0) throw new Error(`files: Redis bytes (${size}): ${result.errors[0]}`);
      const a1 = await keyCensus(redis, '*');
      const m1 = await readMemory(redis, settleMs);
      const e1 = await memoryUsage(redis, [events]);
      const others = censusDelta(inside(a0, false), inside(a1, false), '', [events]);
      const raw = (m1.keys - m0.keys - (e1 - e0)) / jobs;
      const used = raw - others.total / jobs;
      this.ctx.progress.log(
        `${this.name}: Redis bytes per job, ${size} image, ${own}: used_memory ${Math.round(raw)} less others' keys ${Math.round(others.total / jobs)} = ${Math.round(used)}; events ${Math.round((e1 - e0) / jobs)}; ` +
          `INFO memory / MEMORY STATS moved per job: ${JSON.stringify(fieldsDelta(m0, m1, jobs))}; others' keys moved: ${JSON.stringify(others.byFamily)}`,
      );
      return { used, raw, census: census ? censusDelta(inside(a0, true), inside(a1, true), own, [events]) : undefined };
    };
    const template = await measure(o.memoryJobs, bullKey(this.ctx.prefix, this.image.queue, 'events'), () => this.thumbTemplate(size), this.ctx.prefix, true);
    const peer = await measure(size === 'large' ? o.peerLargeJobs : o.memoryJobs, `${this.peerPrefix}:${PEER_QUEUE}:events`, () => this.thumbPeer(size), this.peerPrefix, false);
    await this.dropPeerJobs();
    this.rounds.add(`redisBytes.${size}.template`, template.used);
    this.rounds.add(`redisBytesRaw.${size}.template`, template.raw);
    this.rounds.add(`redisBytes.${size}.peer`, peer.used);
    this.rounds.add(`redisBytes.${size}.ratio`, template.used / peer.used);
    this.rounds.add(`redisKeyBytes.${size}.template`, template.census!.total / o.memoryJobs);
    this.census[size] = Object.fromEntries(
      Object.entries(template.census!.byFamily)
        .map(([family, bytes]) => [family, Math.round(bytes / o.memoryJobs)] as const)
        .sort((a, b) => b[1] - a[1]),
    );
    if (size === 'large' && this.ctx.redis.own) {
      // The same jobs on a Redis with its default hash encoding (job hashes as hash tables: see
      // QUEUE_REDIS_ARGS in test/support/redis.ts), to show what the queue Redis's setting is worth.
      const [, shipped] = (await redis.config('GET', 'hash-max-listpack-value')) as [string, string];
      await redis.config('SET', 'hash-max-listpack-value', '64');
      try {
        const plain = await measure(o.memoryJobs, bullKey(this.ctx.prefix, this.image.queue, 'events'), () => this.thumbTemplate(size), this.ctx.prefix, true);
        this.rounds.add('redisBytes.largeRedisDefaults.template', plain.used);
        this.rounds.add('redisKeyBytes.largeRedisDefaults.template', plain.census!.total / o.memoryJobs);
      } finally {
        await redis.config('SET', 'hash-max-listpack-value', shipped);
      }
    }
    if (size === 'large') {
      const last = (name: string) => this.rounds.get(name).values.at(-1)!;
      this.rounds.add('redisBytes.largeLessSmall', template.used - last('redisBytes.small.template'));
      this.rounds.add('redisBytesRaw.largeLessSmall', template.raw - last('redisBytesRaw.small.template'));
      this.rounds.add('redisKeyBytes.largeLessSmall', last('redisKeyBytes.large.template') - last('redisKeyBytes.small.template'));
    }
  }

  /**
   * MB/s of `count` concurrent uploads of `bytes` each (first byte sent to last answer), each file
   * distinct: through the API (POST /v1/jobs/bench-file, multipart, 202 once stored and queued) or
   * the bare route. Then waits for the API's jobs and removes the uploaded objects (disk space).
   */
  private async uploads(side: 'template' | 'bare', count: number, bytes: number): Promise<number> {
    const pid = side === 'template' ? this.ctx.servers.api.pid : this.bare!.pid;
    const cpu0 = cpuMs(pid);
    const threads0 = threadCpu(pid, 'name');
    const t0 = performance.now();
    const ids = await Promise.all(Array.from({ length: count }, () => this.upload(side, bytes)));
    const mb = (count * bytes) / 1024 ** 2;
    const mbps = mb / ((performance.now() - t0) / 1000);
    // Where the difference goes: the receiving process's CPU per MB (the API's includes multipart parsing and SHA-256), and by thread.
    this.rounds.add(`uploadCpuMsPerMB.${side}`, (cpuMs(pid) - cpu0) / mb);
    const threads = Object.entries(threadCpu(pid, 'name'))
      .map(([name, ms]) => [name, (ms - (threads0[name] ?? 0)) / mb] as const)
      .filter(([, perMB]) => perMB >= 0.005)
      .map(([name, perMB]) => `${name} ${perMB.toFixed(2)}`);
    this.ctx.progress.log(`  ${this.name}, uploads, ${side}: ${mbps.toFixed(0)} MB/s, ${((cpuMs(pid) - cpu0) / mb).toFixed(2)} ms of CPU per MB (by thread: ${threads.join(', ')})`);
    if (side === 'template') await this.settled(ids.filter((id): id is string => id !== undefined));
    await this.dropLargeObjects();
    return mbps;
  }

  /** One upload; the job's id on the template's side. */
  private async upload(side: 'template' | 'bare', bytes: number): Promise<string | undefined> {
    if (side === 'bare') {
      const url = new URL('/upload', this.bare!.url);
      const reply = await sendStream(url, { 'content-type': 'application/octet-stream', 'content-length': bytes }, generated(bytes, this.pattern), 300_000);
      if (reply.status !== 201) throw new Error(`files: bare upload: HTTP ${reply.status}, ${reply.text.slice(0, 300)}`);
      return undefined;
    }
    const url = new URL(`/v1/jobs/${benchJobs.file.name}`, this.ctx.servers.api.url);
    const file = { part: 'file', filename: 'upload.zip', contentType: 'application/zip', bytes, chunks: generated(bytes, this.pattern) };
    const reply = await sendMultipart(url, keyHeader(url.href), { label: 'bench' }, file, 300_000);
    if (reply.status !== 202 && reply.status !== 200) throw new Error(`files: upload: HTTP ${reply.status}, ${reply.text.slice(0, 300)}`);
    return (JSON.parse(reply.text) as View).id;
  }

  /** Waits until the API's jobs `ids` have ended. */
  private async settled(ids: string[]): Promise<void> {
    const deadline = Date.now() + 60_000;
    for (const id of ids) {
      for (;;) {
        const { body } = await this.template!.json<View>('GET', `/v1/jobs/${id}`);
        if (body?.status === 'completed' || body?.status === 'failed') break;
        if (Date.now() > deadline) throw new Error(`files: job ${id} still ${body?.status} after a minute`);
        await sleep(50);
      }
    }
  }

  /** Removes the large objects of the legs (inputs of ended jobs, the bare route's files): the store's disk is the host's. */
  private async dropLargeObjects(): Promise<void> {
    const store = this.store!;
    const keys: string[] = [];
    for await (const key of store.list()) {
      if (key.startsWith('bare/') || (key.startsWith('sha256/') && ((await store.stat(key))?.bytes ?? 0) >= 1024 * 1024)) keys.push(key);
    }
    await store.delete(keys);
  }

  /** The API's RSS before, and its peak while `rssUploads` uploads run at once (sampled every 20 ms). */
  private async rssGrowth(): Promise<void> {
    const o = this.ctx.opts.files;
    const api = this.ctx.servers.api;
    // A full collection first (SIGUSR2, bench-jobs.preload.ts): the baseline is what the API holds, not garbage.
    api.signal('SIGUSR2');
    await sleep(200);
    const before = rssBytes(api.pid);
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, rssBytes(api.pid))), 20);
    try {
      const t0 = performance.now();
      const ids = await Promise.all(Array.from({ length: o.rssUploads }, () => this.upload('template', o.rssUploadBytes)));
      this.rounds.add('rssUploadMBps', (o.rssUploads * o.rssUploadBytes) / 1024 ** 2 / ((performance.now() - t0) / 1000));
      peak = Math.max(peak, rssBytes(api.pid));
      clearInterval(sampler);
      await this.settled(ids.filter((id): id is string => id !== undefined));
    } finally {
      clearInterval(sampler);
    }
    await this.dropLargeObjects();
    this.rounds.add('rssBefore', before);
    this.rounds.add('rssPeak', peak);
    this.rounds.add('rssGrowth', peak - before);
  }

  /**
   * GET /v1/jobs/{id} req/s idle, then while `feeders` callers keep large-image thumbnails running
   * through the same API (the pool saturated), the callers on a thread of their own (ThumbnailFeeders).
   */
  private async isolation(): Promise<void> {
    const o = this.ctx.opts.files;
    const { api, worker } = this.ctx.servers;
    const get = { url: `${api.url}/v1/jobs/${this.doneJobId}`, connections: o.connections };
    const quiet = this.watchFrom(0);
    const idle = await blast({ ...get, durationS: o.idleS });
    this.watched('idle', quiet, idle.ok, 0);
    const submit = new URL(`/v1/jobs/${this.image.name}`, api.url).href;
    const feeders = new ThumbnailFeeders({
      submit,
      headers: keyHeader(submit),
      image: this.images!.large.data,
      part: Object.keys(this.image.files)[0],
      input: THUMB,
      callers: o.feeders,
      tag: `bench feed ${randomBytes(4).toString('hex')}`,
    });
    try {
      await poolSaturated(worker, Math.min(this.ctx.opts.threads, o.feeders), 30_000);
      const watch = this.watchFrom(feeders.fed);
      const busy = await blast({ ...get, durationS: o.busyS });
      this.watched('busy', watch, busy.ok, feeders.fed);
      this.rounds.add('getIdle', idle.rps);
      this.rounds.add('getBusy', busy.rps);
      this.rounds.add('isolation', busy.rps / idle.rps);
      this.rounds.add('getBusyP99', busy.latency.p99);
    } finally {
      await feeders.stop();
    }
    this.rounds.add('fedThumbs', feeders.fed);
  }

  /** The counters `watched` reads a leg's use from, as they are now. */
  private watchFrom(fed: number) {
    const { api, worker } = this.ctx.servers;
    return { at: performance.now(), host: hostCpu(), api: schedCounters(api.pid), apiThreads: threadCpu(api.pid, 'name'), worker: threadCpu(worker.pid, 'policy'), fed };
  }

  /**
   * What a GET leg shared the host with, to find what takes a round down: the API's CPU and
   * run-queue wait per GET, its CPU per thumbnail fed (each one an upload and a download through it),
   * the cores each process used, the API's by thread (its loop, the hashing thread, libuv's, V8's), and the worker's by
   * scheduling policy (libvips's threads on SCHED_IDLE or not). Logged for both legs, kept in the
   * rounds for the busy one.
   */
  private watched(leg: 'idle' | 'busy', from: ReturnType<FilesScenario['watchFrom']>, gets: number, fed: number): void {
    const { api, worker } = this.ctx.servers;
    const wallMs = performance.now() - from.at;
    const host = hostCpu();
    const apiNow = schedCounters(api.pid);
    const workerNow = threadCpu(worker.pid, 'policy');
    const apiThreadsNow = threadCpu(api.pid, 'name');
    const named = [api.pid, worker.pid, this.redisPid ?? -1];
    const { byLabel, others, topOthers } = hostCpuShares(from.host, host, wallMs, {
      api: [api.pid],
      worker: [worker.pid],
      redis: this.redisPid ? [this.redisPid] : [],
      bench: [process.pid],
      run: childrenOf(host, process.pid).filter((pid) => !named.includes(pid)),
    });
    const fedNow = fed - from.fed;
    const apiCpu = apiNow.cpuMs - from.api.cpuMs;
    if (leg === 'busy') {
      this.rounds.add('isoApiCpuPerGetUs', (apiCpu / Math.max(1, gets)) * 1000);
      this.rounds.add('isoApiWaitPerGetUs', ((apiNow.waitMs - from.api.waitMs) / Math.max(1, gets)) * 1000);
      for (const [label, cores] of Object.entries(byLabel)) this.rounds.add(`isoCores.${label}`, cores);
      this.rounds.add('isoCores.others', others);
    }
    const cores = (now: Record<string, number>, then: Record<string, number>) =>
      Object.keys(now)
        .map((key) => [key, (now[key] - (then[key] ?? 0)) / wallMs] as const)
        .filter(([, used]) => used >= 0.005)
        .map(([key, used]) => `${key} ${used.toFixed(2)}`)
        .join(', ');
    const policies = cores(workerNow, from.worker);
    const c = (n: number) => n.toFixed(2);
    this.ctx.progress.log(
      `  ${this.name}, GET ${leg}: ${gets} GETs, ${fedNow} thumbnails fed; API ${c(apiCpu / wallMs)} cores (${((apiCpu / Math.max(1, gets)) * 1000).toFixed(0)} µs per GET all told), ` +
        `${(((apiNow.waitMs - from.api.waitMs) / Math.max(1, gets)) * 1000).toFixed(0)} µs run-queue wait per GET; cores used: API ${c(byLabel.api)} (by thread: ${cores(apiThreadsNow, from.apiThreads)}), worker ${c(byLabel.worker)} (by policy: ${policies}), ` +
        `Redis ${c(byLabel.redis)}, bench ${c(byLabel.bench)}, the run's other processes ${c(byLabel.run)}, other processes on the host ${c(others)} (${topOthers.join(', ') || 'none'})`,
    );
  }

  result(): ScenarioReport {
    return filesReport(this.rounds, this.ctx.opts, this.facts, this.image.name, this.census);
  }

  async close(): Promise<void> {
    this.template?.close();
    this.peer?.close();
    await this.peerQueue?.close().catch(() => undefined);
    this.connection?.disconnect();
    await this.bare?.stop();
    this.bare = undefined;
  }
}
