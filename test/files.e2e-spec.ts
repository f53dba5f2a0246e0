import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import IORedis from 'ioredis';
import { type BlobStore, blobKeyOf, openBlobStore, stagingKeyOf } from '@app/blobs';
import { blobTargetOf } from '@app/config';
import { BlobLeases, queuePrefix, sweepBlobs } from '@app/queue';
import { type AppProcess, startAll, startApp, stackEnv } from './support/apps';
import { request, resultOf } from './support/http';
import { ifPresent, present } from './support/capabilities';
import { fileTypeCases } from './support/file-cases';
import { S3_CREDENTIALS, S3Server } from './support/s3-server';
import { waitFor } from './support/wait';

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
/** Bytes a PNG's magic number starts: file-echo stores, never decodes, them. */
const png = (bytes = 4096) => Buffer.concat([PNG_SIGNATURE, randomBytes(bytes - PNG_SIGNATURE.length)]);
const sha256 = (bytes: Buffer) => require('node:crypto').createHash('sha256').update(bytes).digest('hex') as string;
/** Two callers: a file's URL answers its job's owners only. */
const ALICE = { authorization: `Bearer ${randomBytes(24).toString('hex')}` };
const BOB = { authorization: `Bearer ${randomBytes(24).toString('hex')}` };
const API_KEYS = `alice=${ALICE.authorization.slice(7)},bob=${BOB.authorization.slice(7)}`;
const PROBE = join(__dirname, 'support', 'module-probe.js');

/** A multipart submission of `input` and files (name → bytes), as a browser's FormData sends it. */
function form(input: unknown, files: Record<string, Buffer>, type = 'image/png'): FormData {
  const body = new FormData();
  if (input !== undefined) body.set('input', JSON.stringify(input));
  for (const [name, bytes] of Object.entries(files)) body.set(name, new Blob([new Uint8Array(bytes)], { type }), `${name}.png`);
  return body;
}

interface Stack {
  kind: 'file' | 's3';
  env: Record<string, string | undefined>;
  api: AppProcess;
  worker: AppProcess;
  store: BlobStore;
  queue: Queue;
}

const keysOf = async (store: BlobStore) => {
  const keys: string[] = [];
  for await (const key of store.list()) keys.push(key);
  return keys.sort();
};

/**
 * Files in: multipart submissions of a type that takes a file, streamed into the blob store while
 * hashed, through both stores (a directory; a bucket of a real S3-compatible server, s3rver). One
 * API and one worker per store, shared by the cases.
 */
describe('file inputs', () => {
  let s3: S3Server;
  let dir: string;
  let probeFile: string;
  let redis: IORedis;
  const stacks: Partial<Record<'file' | 's3', Stack>> = {};
  const saved = { ...process.env };

  beforeAll(async () => {
    Object.assign(process.env, S3_CREDENTIALS);
    dir = mkdtempSync(join(tmpdir(), 'files-'));
    probeFile = join(dir, 'modules.jsonl');
    s3 = await S3Server.start();
    redis = new IORedis(process.env.E2E_REDIS_URL!);
    // why REQUEST_TIMEOUT_MS=2000: the stalled upload is cut off within the test's time.
    // why the module probe: it records any file of Nest a pool thread loads (none may; see thread.ts).
    const probe = { NODE_OPTIONS: `--require "${PROBE}"`, MODULE_PROBE_FILE: probeFile, MODULE_PROBE_PACKAGES: '@nestjs' };
    const envs = {
      file: stackEnv('files-dir', { BLOB_STORE_URL: `file://${join(dir, 'blobs')}`, REQUEST_TIMEOUT_MS: '2000', API_KEYS, ...probe }),
      s3: stackEnv('files-s3', { ...s3.env('jobs/'), API_KEYS }),
    };
    // why 60 s: four apps start at once (20 s each is the default).
    const start = (kind: 'api' | 'worker', env: Record<string, string | undefined>) => startApp(kind, env, { timeoutMs: 60_000 });
    const started = await startAll([start('api', envs.file), start('worker', envs.file), start('api', envs.s3), start('worker', envs.s3)]);
    for (const [i, kind] of (['file', 's3'] as const).entries()) {
      const env = envs[kind];
      stacks[kind] = {
        kind,
        env,
        api: started[i * 2],
        worker: started[i * 2 + 1],
        store: openBlobStore(blobTargetOf(env.BLOB_STORE_URL!) as never),
        queue: new Queue('default', { connection: redis, prefix: queuePrefix(env.REDIS_PREFIX!, 'default') }),
      };
    }
  }, 120_000);

  afterAll(async () => {
    for (const stack of Object.values(stacks)) {
      await Promise.all([stack.api.stop(), stack.worker.stop(), stack.queue.close()]);
      stack.store.close();
    }
    redis?.disconnect();
    await s3?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
    process.env = saved;
  });

  const post = (stack: Stack, type: string, body: FormData | string, headers: Record<string, string> = {}) =>
    request(`${stack.api.url}/v1/jobs/${type}`, { method: 'POST', body, headers: { ...ALICE, ...headers } });
  const get = (stack: Stack, path: string, headers: Record<string, string> = {}) =>
    fetch(`${stack.api.url}${path}`, { headers: { ...ALICE, ...headers }, redirect: 'manual' });

  // The cases of the types that take files (test/files/<type>.cases.ts), on these stacks.
  for (const cases of fileTypeCases()) {
    cases({
      post: (kind, type, input, files, headers) => post(stacks[kind]!, type, form(input, files), headers),
      download: async (kind, url) => {
        let res = await get(stacks[kind]!, url);
        if (res.status === 303) res = await fetch(res.headers.get('location')!);
        expect(res.status).toBe(200);
        return Buffer.from(await res.arrayBuffer());
      },
    });
  }

  describe.each(['file', 's3'] as const)('into the %s store', (kind) => {
    it('stores the file under its SHA-256, its run reads it on the pool thread, and the job keeps only a reference', async () => {
      const stack = stacks[kind]!;
      const bytes = png(20_000);
      const reply = await post(stack, 'file-echo', form({ label: kind }, { file: bytes }), { prefer: 'wait=20' });
      // What the run read on its pool thread (a path, or a presigned URL): the very bytes sent.
      expect([reply.status, reply.body.status, reply.body.result]).toEqual([200, 'completed', { label: kind, bytes: bytes.length, contentType: 'image/png', sha256: sha256(bytes) }]);
      const job = await stack.queue.getJob(reply.body.id);
      expect(job!.data.files).toEqual({ file: { sha256: sha256(bytes), bytes: bytes.length, contentType: 'image/png' } });
      expect(JSON.stringify(job!.data).length).toBeLessThan(1024);
      expect(await stack.store.stat(blobKeyOf(sha256(bytes)))).toMatchObject({ bytes: bytes.length });
      expect((await keysOf(stack.store)).filter((key) => !key.startsWith('sha256/'))).toEqual([]);
    });

    it('runs the same file with the same input once, whoever sends it; another file is other work', async () => {
      const stack = stacks[kind]!;
      const bytes = png();
      const first = await post(stack, 'file-echo', form({ label: 'same' }, { file: bytes }), { prefer: 'wait=20' });
      const again = await post(stack, 'file-echo', form({ label: 'same' }, { file: bytes }), BOB);
      expect([again.status, again.body.id, again.body.cached]).toEqual([200, first.body.id, true]);
      const other = await post(stack, 'file-echo', form({ label: 'same' }, { file: png() }));
      expect(other.body.id).not.toBe(first.body.id);
    });

    it('returns a file: the view lists it, its owners download it (another caller gets 404), and its content is stored once', async () => {
      const stack = stacks[kind]!;
      const bytes = png(30_000);
      const reply = await post(stack, 'file-echo', form({ label: 'copy' }, { file: bytes }), { prefer: 'wait=20' });
      const url = `/v1/jobs/${reply.body.id}/files/copy.png`;
      expect(reply.body.files).toEqual([{ name: 'copy.png', bytes: bytes.length, contentType: 'image/png', sha256: sha256(bytes), url }]);
      // The copy has the content of the input: one object holds both.
      expect((await keysOf(stack.store)).filter((key) => key.endsWith(sha256(bytes)))).toEqual([blobKeyOf(sha256(bytes))]);
      const download = await get(stack, url);
      let body = download;
      if (kind === 's3') {
        // The bytes never pass through the API: a short-lived presigned URL of the store.
        expect([download.status, download.headers.get('cache-control')]).toEqual([303, 'no-store']);
        body = await fetch(download.headers.get('location')!);
        expect(body.headers.get('content-disposition')).toContain('filename="copy.png"');
      } else {
        const etag = `"${sha256(bytes)}"`;
        expect([download.status, download.headers.get('content-length'), download.headers.get('etag'), download.headers.get('content-disposition')]).toEqual([
          200,
          String(bytes.length),
          etag,
          `attachment; filename="copy.png"; filename*=UTF-8''copy.png`,
        ]);
        const range = await get(stack, url, { range: 'bytes=100-199' });
        expect([range.status, range.headers.get('content-range'), Buffer.from(await range.arrayBuffer())]).toEqual([206, `bytes 100-199/${bytes.length}`, bytes.subarray(100, 200)]);
        expect((await get(stack, url, { 'if-none-match': etag })).status).toBe(304);
        const past = await get(stack, url, { range: `bytes=${bytes.length}-` });
        expect([past.status, past.headers.get('content-range')]).toEqual([416, `bytes */${bytes.length}`]);
      }
      expect([body.headers.get('content-type'), Buffer.from(await body.arrayBuffer())]).toEqual(['image/png', bytes]);
      expect((await get(stack, url, BOB)).status).toBe(404);
      const none = await get(stack, `/v1/jobs/${reply.body.id}/files/other.png`);
      expect([none.status, ((await none.json()) as { code: string }).code]).toEqual([404, 'FILE_NOT_FOUND']);
    });

    it('keeps a JSON result over 64 KiB in the store, not in Redis, as the file result.json', async () => {
      const stack = stacks[kind]!;
      const numbers = Array.from({ length: 20_000 }, (_, i) => i * 1000 + kind.length);
      const reply = await request(`${stack.api.url}/v1/jobs/echo`, { method: 'POST', json: { numbers }, headers: { ...ALICE, prefer: 'wait=20' } });
      expect([reply.status, reply.body.result, reply.body.files.map((f: { name: string; contentType: string }) => [f.name, f.contentType])]).toEqual([
        200,
        undefined,
        [['result.json', 'application/json']],
      ]);
      expect(await resultOf(stack.api.url, reply.body, ALICE)).toEqual({ numbers, choice: 'a' });
      const job = await stack.queue.getJob(reply.body.id);
      expect(JSON.stringify(job!.returnvalue).length).toBeLessThan(1024);
    });
  });

  it('reads and writes files on pool threads that load no Nest', async () => {
    const reply = await post(stacks.file!, 'file-echo', form({ label: 'probe' }, { file: png() }), { prefer: 'wait=20' });
    expect(reply.body.files).toHaveLength(1);
    const entries = readFileSync(probeFile, 'utf8').trim().split('\n').map((line) => JSON.parse(line) as { thread: string; event: string; path?: string });
    expect(entries.some((entry) => entry.thread !== 'main' && entry.event === 'start')).toBe(true);
    expect(entries.filter((entry) => entry.thread !== 'main' && entry.event === 'resolved').map((entry) => entry.path)).toEqual([]);
  });

  it('cuts a file off at its limit with 413, refuses a type its bytes do not show with 415, and leaves nothing', async () => {
    const stack = stacks.file!;
    const before = await keysOf(stack.store);
    const big = await post(stack, 'file-echo', form({}, { file: png(64 * 1024 + 1) }));
    expect([big.status, big.headers.get('content-type'), big.body.code]).toEqual([413, expect.stringMatching(/^application\/problem\+json/), 'PAYLOAD_TOO_LARGE']);
    expect(big.body.detail).toBe('The file "file" is larger than 65536 bytes, the most "file-echo" takes');
    // An HTML page the client calls a PNG.
    const html = await post(stack, 'file-echo', form({}, { file: Buffer.from('<html><script>alert(1)</script></html>'.padEnd(64)) }));
    expect([html.status, html.body.code]).toEqual([415, 'UNSUPPORTED_MEDIA_TYPE']);
    expect(html.body.detail).toContain('"file-echo" accepts image/png, image/gif, application/pdf (checked by its content)');
    expect(await keysOf(stack.store)).toEqual(before);
  });

  it('answers a submission that is not what the type takes with a problem, and stores nothing', async () => {
    const stack = stacks.file!;
    const before = await keysOf(stack.store);
    const json = await request(`${stack.api.url}/v1/jobs/file-echo`, { method: 'POST', json: { label: 'x' }, headers: ALICE });
    expect([json.status, json.body.detail]).toEqual([415, '"file-echo" takes files: send multipart/form-data with a part "input" (its JSON input) and "file"']);
    expect((await post(stack, 'echo', form({ n: 1 }, { file: png() }))).status).toBe(415);
    const missing = await post(stack, 'file-echo', form({ label: 'x' }, {}));
    expect([missing.status, missing.body.code, missing.body.errors]).toEqual([400, 'INVALID_INPUT', [{ field: 'file', message: 'required file part missing' }]]);
    const extra = await post(stack, 'file-echo', form({}, { file: png(), other: png() }));
    expect([extra.status, extra.body.detail]).toEqual([400, '"file-echo" takes no part named "other"; its parts are "input", "file"']);
    const bad = await post(stack, 'file-echo', form({ label: 7 }, { file: png() }));
    expect([bad.status, bad.body.code]).toEqual([400, 'INVALID_INPUT']);
    expect(await keysOf(stack.store)).toEqual(before);
  });

  it('reads a small refused body to its end before it answers, so a client still sending it gets the refusal', async () => {
    const { hostname, port } = new URL(stacks.file!.api.url);
    const boundary = 'test-boundary';
    // The part "other" is refused as soon as its header arrives; the rest of the body comes later.
    const head = `--${boundary}\r\ncontent-disposition: form-data; name="input"\r\n\r\n{}\r\n--${boundary}\r\ncontent-disposition: form-data; name="other"; filename="o.png"\r\ncontent-type: image/png\r\n\r\n${'x'.repeat(1000)}`;
    const rest = `${'x'.repeat(1000)}\r\n--${boundary}--\r\n`;
    const socket = connect(Number(port), hostname);
    let answer = '';
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString()));
    const closed = new Promise((resolve) => socket.on('close', resolve));
    const headers = [`POST /v1/jobs/file-echo HTTP/1.1`, `host: ${hostname}:${port}`, `authorization: ${ALICE.authorization}`, `content-type: multipart/form-data; boundary=${boundary}`, `content-length: ${head.length + rest.length}`];
    socket.write(`${headers.join('\r\n')}\r\n\r\n${head}`);
    await new Promise((resolve) => setTimeout(resolve, 300));
    // Not answered (nor closed) while the client is still sending.
    expect(answer).toBe('');
    socket.write(rest);
    await closed;
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    expect(answer).toContain('takes no part named \\"other\\"');
  });

  ifPresent('uploads').describe.each(['file', 's3'] as const)('uploads, into the %s store', (kind) => {
    /** A submission that names upload `id` for the file `file` instead of sending it. */
    const naming = (input: unknown, id: string) => {
      const body = new FormData();
      body.set('input', JSON.stringify(input));
      body.set('file', id);
      return body;
    };
    const start = (bytes: number, headers = ALICE) =>
      request(`${stacks[kind]!.api.url}/v1/uploads`, { method: 'POST', json: { type: 'file-echo', file: 'file', bytes }, headers });
    const put = (url: string, bytes: Buffer) =>
      kind === 's3'
        ? fetch(url, { method: 'PUT', body: new Uint8Array(bytes) })
        : fetch(`${stacks[kind]!.api.url}${url}`, { method: 'PUT', body: new Uint8Array(bytes), headers: { ...ALICE, 'content-type': 'application/octet-stream' } });

    it("takes a file PUT to the upload's url; a submission of its owner that names it runs on it, once", async () => {
      const stack = stacks[kind]!;
      const bytes = png(40_000);
      const created = await start(bytes.length);
      expect([created.status, created.body.method, Date.parse(created.body.expiresAt) > Date.now() + 3000 * 1000]).toEqual([201, 'PUT', true]);
      const { id, url } = created.body as { id: string; url: string };
      // S3: a presigned URL of the store, the bytes never pass through the API; a file store: the API's own route.
      expect(url).toEqual(kind === 's3' ? expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/nest-offload-test\/jobs\/uploads\//) : `/v1/uploads/${id}`);
      expect((await put(url, bytes)).status).toBe(kind === 's3' ? 200 : 204);
      const bob = await post(stack, 'file-echo', naming({ label: 'up' }, id), BOB);
      expect([bob.status, bob.body.code]).toEqual([404, 'UPLOAD_NOT_FOUND']);
      const reply = await post(stack, 'file-echo', naming({ label: 'up' }, id), { prefer: 'wait=20' });
      expect([reply.status, reply.body.status, reply.body.result]).toEqual([200, 'completed', { label: 'up', bytes: bytes.length, contentType: 'image/png', sha256: sha256(bytes) }]);
      const again = await post(stack, 'file-echo', naming({ label: 'up again' }, id));
      expect([again.status, again.body.code]).toEqual([404, 'UPLOAD_NOT_FOUND']);
      const keys = await keysOf(stack.store);
      expect([keys.filter((key) => key.startsWith('uploads/')), keys.includes(blobKeyOf(sha256(bytes)))]).toEqual([[], true]);
    });

    it('refuses a file over the limit or of another type, leaving nothing, and an upload not received yet', async () => {
      const stack = stacks[kind]!;
      const over = await start(64 * 1024 + 1);
      expect([over.status, over.body.code]).toEqual([413, 'PAYLOAD_TOO_LARGE']);
      const before = (await keysOf(stack.store)).filter((key) => !key.startsWith('uploads/'));
      const html = await start(64);
      const early = await post(stack, 'file-echo', naming({}, html.body.id));
      expect([early.status, early.body.code]).toEqual([400, 'INVALID_INPUT']);
      // Through the API (file store) the PUT itself is refused; S3 takes any bytes, and the submission refuses them.
      const sent = await put(html.body.url, Buffer.from('<html><script>alert(1)</script></html>'.padEnd(64)));
      expect(sent.status).toBe(kind === 'file' ? 415 : 200);
      const refused = await post(stack, 'file-echo', naming({}, html.body.id));
      expect([refused.status, refused.body.code]).toEqual(kind === 'file' ? [400, 'INVALID_INPUT'] : [415, 'UNSUPPORTED_MEDIA_TYPE']);
      const big = await start(1000);
      if (kind === 'file') expect((await put(big.body.url, png(64 * 1024 + 10))).status).toBe(413);
      else await put(big.body.url, png(64 * 1024 + 10));
      const tooBig = await post(stack, 'file-echo', naming({}, big.body.id));
      expect(tooBig.status).toBe(kind === 'file' ? 400 : 413);
      const keys = await keysOf(stack.store);
      expect(keys.filter((key) => !key.startsWith('uploads/'))).toEqual(before);
      expect(keys.filter((key) => key.endsWith(html.body.id) || key.endsWith(big.body.id))).toEqual([]);
      const unknown = await post(stack, 'file-echo', naming({}, 'zz-00000000000000000000000000000000'));
      expect([unknown.status, unknown.body.code]).toEqual([404, 'UPLOAD_NOT_FOUND']);
    });
  });

  ifPresent('batch').it('refuses a batch of a type that takes files (its items would have none)', async () => {
    const reply = await request(`${stacks.file!.api.url}/v1/jobs/file-echo/batch`, { method: 'POST', json: { items: [{ label: 'x' }] }, headers: ALICE });
    expect([reply.status, reply.body.code]).toEqual([415, 'UNSUPPORTED_MEDIA_TYPE']);
  });

  it('leaves nothing of an upload the client aborts or stalls mid-file', async () => {
    const stack = stacks.file!;
    const before = await keysOf(stack.store);
    const boundary = 'b0undary';
    const head = `--${boundary}\r\nContent-Disposition: form-data; name="input"\r\n\r\n{}\r\n--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.png"\r\nContent-Type: image/png\r\n\r\n`;
    const partial = (then: 'abort' | 'stall') =>
      new Promise<string>((resolve) => {
        const req = httpRequest(`${stack.api.url}/v1/jobs/file-echo`, {
          method: 'POST',
          headers: { ...ALICE, 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': String(head.length + 60_000) },
        });
        req.on('response', (res) => resolve(`answered ${res.statusCode}`));
        req.on('error', (error) => resolve(`closed: ${(error as NodeJS.ErrnoException).code}`));
        req.write(head);
        req.write(png(30_000));
        if (then === 'abort') setTimeout(() => req.destroy(), 300);
      });
    expect(await partial('abort')).toBe('closed: ECONNRESET');
    // The server's REQUEST_TIMEOUT_MS (2 s here) cuts the stalled client off.
    expect(await partial('stall')).toMatch(/^(answered 408|closed: ECONNRESET)$/);
    await waitFor(async () => JSON.stringify(await keysOf(stack.store)) === JSON.stringify(before), { timeoutMs: 5000, what: 'the store as before' });
    expect(await keysOf(stack.store)).toEqual(before);
  });

  it('retries a job whose result write finds the store down, and writes the result once it is back', async () => {
    const stack = stacks.s3!;
    // A result over 64 KiB goes to the store from the pool thread: the write fails while it is down.
    const numbers = Array.from({ length: 20_000 }, (_, i) => i * 7 + 3);
    await s3.stopServer();
    let id: string;
    try {
      const reply = await request(`${stack.api.url}/v1/jobs/echo`, { method: 'POST', json: { numbers }, headers: ALICE });
      id = reply.body.id as string;
      await waitFor(async () => ((await stack.queue.getJob(id))?.attemptsMade ?? 0) >= 1, { timeoutMs: 20_000, what: 'a failed first attempt' });
    } finally {
      await s3.startServer();
    }
    const job = await stack.queue.getJob(id);
    expect(job!.failedReason).toMatch(/^JOB_FAILED: blob store s3:\/\/nest-offload-test\/jobs\/ at http:\/\/127\.0\.0\.1:\d+: /);
    await waitFor(async () => (await stack.queue.getJob(id))?.returnvalue !== null && (await stack.queue.getJob(id))?.returnvalue !== undefined, { timeoutMs: 20_000, what: 'the retry' });
    const view = (await request(`${stack.api.url}/v1/jobs/${id}`, { headers: ALICE })).body;
    expect([view.status, view.attempts >= 2, await resultOf(stack.api.url, view, ALICE)]).toEqual(['completed', true, { numbers, choice: 'a' }]);
  });

  it('answers 503 naming the store when it is down at submission, and queues nothing', async () => {
    const stack = stacks.s3!;
    const jobs = async () => Object.values(await stack.queue.getJobCounts()).reduce((a, b) => a + b, 0);
    const before = await jobs();
    await s3.stopServer();
    try {
      const reply = await post(stack, 'file-echo', form({ label: 'down' }, { file: png() }));
      expect([reply.status, reply.body.code, reply.headers.get('retry-after')]).toEqual([503, 'BLOB_STORE_UNAVAILABLE', '5']);
      expect(reply.body.detail).toMatch(/^The blob store \(s3:\/\/nest-offload-test\/jobs\/ at http:\/\/127\.0\.0\.1:\d+\) is unavailable; nothing was queued, retry later$/);
      expect(await jobs()).toBe(before);
    } finally {
      await s3.startServer();
    }
  });

  // Last: it moves time past every lease, as the stores' real sweeps will.
  describe.each(['file', 's3'] as const)('lifecycle of the %s store', (kind) => {
    it('leaves no object once the jobs, their cache entries and the uploads have expired', async () => {
      const stack = stacks[kind]!;
      const prefix = stack.env.REDIS_PREFIX!;
      const leases = new BlobLeases(redis, prefix);
      // One file job more, whose input another job of the suite shared (content addressing), and one of its own.
      const shared = png(10_000);
      for (const label of ['one', 'two']) expect((await post(stack, 'file-echo', form({ label }, { file: shared }), { prefer: 'wait=20' })).body.status).toBe('completed');
      // An upload received and never used; and a staged write its API died before using (left as such a death leaves it).
      if (present('uploads')) {
        const created = await request(`${stack.api.url}/v1/uploads`, { method: 'POST', json: { type: 'file-echo', file: 'file', bytes: 5000 }, headers: ALICE });
        const url = kind === 's3' ? created.body.url : `${stack.api.url}${created.body.url}`;
        const headers = kind === 's3' ? {} : { ...ALICE, 'content-type': 'application/octet-stream' };
        expect((await fetch(url, { method: 'PUT', body: new Uint8Array(png(5000)), headers })).ok).toBe(true);
      }
      await stack.store.write(stagingKeyOf(), png(1000));
      const left = await keysOf(stack.store);
      expect(left.some((key) => key.startsWith('sha256/'))).toBe(true);
      // Every object but staged writes and uploads has a lease, none expired yet: a sweep now removes nothing.
      const options = { stagedMaxAgeMs: 3600_000, orphanGraceMs: 3600_000 };
      expect(await sweepBlobs(stack.store, leases, { ...options, list: true })).toEqual({ deleted: 0, adopted: 0, abandoned: 0 });
      expect((await leases.counts()).leased).toBe(left.filter((key) => key.startsWith('sha256/')).length);

      // 31 days on: past the longest lease (a day's wait in the queue, the job's retention, the thumbnail's day of
      // cache, and a dead letter's 30 days for the input of a job of the suite that failed for good).
      const later = Date.now() + 31 * 24 * 3600_000;
      if (present('uploads')) {
        // why require: a service that removed the uploads capability has no such file.
        const { sweepUploads } = require('./support/uploads-sweep') as { sweepUploads: (store: BlobStore, now: number) => Promise<number> };
        expect(await sweepUploads(stack.store, later)).toBe(1);
      }
      const swept = await sweepBlobs(stack.store, leases, { ...options, now: later, list: true });
      expect(swept).toMatchObject({ deleted: left.filter((key) => key.startsWith('sha256/')).length, adopted: 0 });
      expect(swept.abandoned).toBeGreaterThanOrEqual(1);
      expect(await keysOf(stack.store)).toEqual([]);
      expect(await leases.counts()).toEqual({ leased: 0, deleting: 0 });
    });
  });
});
