import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { AppProcess } from '../../test/support/apps';
import { BENCH_KEY_ENV, keyHeader } from '../load/api-key';
import { generated, sendMultipart, sendStream } from '../load/uploads';
import { sleep } from '../scenarios/context';
import { benchJobs } from '../support/bench-jobs';
import { threadCpu } from '../support/host-cpu';
import { cpuMs, rssBytes, startNode, startRedis, startTemplateApp } from '../support/stack';
import { Rounds } from '../support/stats';

/**
 * The files scenario's upload legs alone, in a minute instead of the scenario's ten: the API's
 * multipart route (`bench-file`) and the bare Fastify route (baselines/bare-upload.main.ts) into
 * one file store, alternating by round; MB/s, the receiving process's CPU per MB (and by thread:
 * its loop, V8's collector threads, libuv's, the hashing thread), its read and write system calls
 * per MB, and the API's RSS
 * peak − before (after a full collection). No worker: the API's jobs wait, as their run is not the
 * measure. For trying a change to the upload path, or node flags for the API (a profile):
 *   UPLOADS_COUNT (8), UPLOADS_MB (50), UPLOADS_ROUNDS (4), UPLOADS_API_ARGS ("--cpu-prof --cpu-prof-dir=/tmp/prof"), UPLOADS_BARE_ARGS (the same for the bare route),
 *   UPLOADS_ROUTE (`multipart`; `put`: each file through POST /v1/uploads and its PUT, a raw body as the bare route's, then a submission naming it),
 *   UPLOADS_API_ENV ("A=1,B=2"), UPLOADS_DIST (the build, ./dist); with --trace-gc in UPLOADS_API_ARGS each
 *   round prints the API's collections by kind, and UPLOADS_GC_LINES=1 their lines
 *
 *   npm run build && npx tsc -p bench/tsconfig.json
 *   npx node bench/.build/bench/tuning/uploads.js
 */
async function main(): Promise<void> {
  const root = join(__dirname, '..', '..', '..', '..');
  const count = Number(process.env.UPLOADS_COUNT ?? 8);
  const bytes = Number(process.env.UPLOADS_MB ?? 50) * 1024 ** 2;
  const roundCount = Number(process.env.UPLOADS_ROUNDS ?? 4);
  const dist = process.env.UPLOADS_DIST ?? join(root, 'dist');
  const apiArgs = (process.env.UPLOADS_API_ARGS ?? '').split(' ').filter(Boolean);
  const apiEnv = Object.fromEntries((process.env.UPLOADS_API_ENV ?? '').split(',').filter(Boolean).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
  const redis = await startRedis(undefined);
  const dir = mkdtempSync(join(tmpdir(), 'nest-offload-uploads-'));
  const processes: AppProcess[] = [];
  const stop = async () => {
    await Promise.all(processes.map((p) => p.stop('SIGTERM')));
    rmSync(dir, { recursive: true, force: true });
    await redis.stop();
  };
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void stop().finally(() => process.exit(1)));
  try {
    const env = {
      REDIS_URL: redis.url,
      REDIS_PREFIX: `uploads-${randomBytes(3).toString('hex')}`,
      NODE_ENV: 'production',
      ...BENCH_KEY_ENV,
      LOG_LEVEL: 'warn',
      BLOB_STORE_URL: pathToFileURL(dir).href,
      BLOB_STORE_ALLOW_FILE: 'true',
      REQUEST_TIMEOUT_MS: '120000',
      ...apiEnv,
    };
    const [api, bare] = await Promise.all([
      startTemplateApp(dist, 'api', env, { cwd: root, nodeArgs: apiArgs }),
      startNode(join(__dirname, '..', 'baselines', 'bare-upload.main.js'), { BLOB_DIR: dir }, { cwd: root, nodeArgs: (process.env.UPLOADS_BARE_ARGS ?? '').split(' ').filter(Boolean) }),
    ]);
    processes.push(api, bare);
    const pattern = randomBytes(1024 * 1024);
    const upload = async (side: 'api' | 'bare') => {
      if (side === 'bare') {
        const reply = await sendStream(new URL('/upload', bare.url), { 'content-type': 'application/octet-stream', 'content-length': bytes }, generated(bytes, pattern), 300_000);
        if (reply.status !== 201) throw new Error(`bare upload: HTTP ${reply.status}, ${reply.text.slice(0, 300)}`);
        return;
      }
      if (process.env.UPLOADS_ROUTE === 'put') {
        const made = await fetch(new URL('/v1/uploads', api.url), { method: 'POST', headers: { ...keyHeader(api.url), 'content-type': 'application/json' }, body: JSON.stringify({ type: benchJobs.file.name, file: 'file', bytes }) });
        if (made.status !== 201) throw new Error(`POST /v1/uploads: HTTP ${made.status}, ${await made.text()}`);
        const { id, url: target } = (await made.json()) as { id: string; url: string };
        const put = new URL(target, api.url);
        const sent = await sendStream(put, { ...keyHeader(put.href), 'content-type': 'application/octet-stream', 'content-length': bytes }, generated(bytes, pattern), 300_000, 'PUT');
        if (sent.status !== 204) throw new Error(`PUT upload: HTTP ${sent.status}, ${sent.text.slice(0, 300)}`);
        const job = await fetch(new URL(`/v1/jobs/${benchJobs.file.name}`, api.url), { method: 'POST', headers: keyHeader(api.url), body: (() => { const f = new FormData(); f.set('input', JSON.stringify({ label: 'bench' })); f.set('file', id); return f; })() });
        if (job.status !== 202 && job.status !== 200) throw new Error(`submit: HTTP ${job.status}, ${await job.text()}`);
        return;
      }
      const url = new URL(`/v1/jobs/${benchJobs.file.name}`, api.url);
      const file = { part: 'file', filename: 'upload.zip', contentType: 'application/zip', bytes, chunks: generated(bytes, pattern) };
      const reply = await sendMultipart(url, keyHeader(url.href), { label: 'bench' }, file, 300_000);
      if (reply.status !== 202 && reply.status !== 200) throw new Error(`upload: HTTP ${reply.status}, ${reply.text.slice(0, 300)}`);
    };
    const rounds = new Rounds();
    for (let round = 0; round <= roundCount; round++) {
      for (const side of round % 2 === 0 ? (['api', 'bare'] as const) : (['bare', 'api'] as const)) {
        const app = side === 'api' ? api : bare;
        // A full collection first (SIGUSR2: bench-jobs.preload.ts, the API's only; the bare route would die of it).
        if (side === 'api') app.signal('SIGUSR2');
        await sleep(300);
        const before = rssBytes(app.pid);
        // The API's heap left by that collection: what it holds after the rounds before, garbage aside.
        const heap = side === 'api' ? await app.metric('nest_offload_nodejs_heap_size_used_bytes') : NaN;
        let peak = before;
        const sampler = setInterval(() => (peak = Math.max(peak, rssBytes(app.pid))), 20);
        const lines0 = app.stderr.length;
        const cpu0 = cpuMs(app.pid);
        const threads0 = threadCpu(app.pid, 'name');
        const io0 = syscalls(app.pid);
        const t0 = performance.now();
        await Promise.all(Array.from({ length: count }, () => upload(side)));
        const s = (performance.now() - t0) / 1000;
        clearInterval(sampler);
        const mb = (count * bytes) / 1024 ** 2;
        rmSync(join(dir, 'sha256'), { recursive: true, force: true });
        rmSync(join(dir, 'bare'), { recursive: true, force: true });
        // Round 0 warms both sides up (JIT, first multipart): not counted.
        if (round === 0) continue;
        rounds.add(`${side}.MBps`, mb / s);
        rounds.add(`${side}.cpuMsPerMB`, (cpuMs(app.pid) - cpu0) / mb);
        rounds.add(`${side}.rssGrowthMB`, (peak - before) / 1024 ** 2);
        if (apiArgs.includes('--trace-gc') && side === 'api') console.log(`round ${round} api: ${gcSummary(app.stderr.slice(lines0))}`);
        if (process.env.UPLOADS_GC_LINES && side === 'api') console.log(app.stderr.slice(lines0).join('\n'));
        const threads1 = threadCpu(app.pid, 'name');
        const io1 = syscalls(app.pid);
        const byThread = Object.entries(threads1).map(([name, ms]) => `${name} ${((ms - (threads0[name] ?? 0)) / mb).toFixed(2)}`).join(', ');
        console.log(`round ${round} ${side}: ${(mb / s).toFixed(0)} MB/s, ${((cpuMs(app.pid) - cpu0) / mb).toFixed(2)} ms CPU/MB (by thread: ${byThread}; reads ${((io1.r - io0.r) / mb).toFixed(0)}/MB, writes ${((io1.w - io0.w) / mb).toFixed(0)}/MB), RSS +${((peak - before) / 1024 ** 2).toFixed(1)} MB (before ${(before / 1024 ** 2).toFixed(0)} MB${side === 'api' ? `, heap after a full collection ${(heap / 1024 ** 2).toFixed(1)} MB` : ''})`);
      }
      if (round > 0) rounds.add('ratio', rounds.get('api.MBps').values.at(-1)! / rounds.get('bare.MBps').values.at(-1)!);
    }
    const m = (name: string) => rounds.get(name);
    console.log(
      `${count} × ${bytes / 1024 ** 2} MB, ${roundCount} rounds: API ${m('api.MBps').median.toFixed(0)} MB/s, ${m('api.cpuMsPerMB').median.toFixed(2)} ms CPU/MB, RSS +${m('api.rssGrowthMB').median.toFixed(1)} MB (max ${m('api.rssGrowthMB').max.toFixed(1)}); ` +
        `bare ${m('bare.MBps').median.toFixed(0)} MB/s, ${m('bare.cpuMsPerMB').median.toFixed(2)} ms CPU/MB; ratio ${m('ratio').median.toFixed(3)} (${m('ratio').min.toFixed(3)}–${m('ratio').max.toFixed(3)})`,
    );
  } catch (error) {
    for (const p of processes) console.error(`${p.url}: ${p.stderr.join('').slice(-3000)}`);
    throw error;
  } finally {
    await stop();
  }
}


/** Read and write system calls a process has made so far (/proc/<pid>/io: syscr, syscw). */
function syscalls(pid: number): { r: number; w: number } {
  const io = readFileSync(`/proc/${pid}/io`, 'utf8');
  return { r: Number(/^syscr: (\d+)/m.exec(io)?.[1]), w: Number(/^syscw: (\d+)/m.exec(io)?.[1]) };
}

/** --trace-gc's lines summed by kind and reason: count and pause ms (e.g. `Scavenge (allocation failure) 120 × 0.8 ms`). */
function gcSummary(lines: string[]): string {
  const by = new Map<string, { n: number; ms: number }>();
  for (const line of lines.join('\n').split('\n')) {
    const match = /ms: ([A-Za-z -]+?) [\d.]+ \([\d.]+\) -> .*? MB, (?:pooled: [\d.]+ MB, )?([\d.]+) \/ [\d.]+ ms.*current mu = [\d.]+\) (.*)$/.exec(line);
    if (!match) continue;
    const key = `${match[1]} (${match[3].replace(/[;\s]+$/, '').replace(/; /g, ': ') || '?'})`;
    const entry = by.get(key) ?? { n: 0, ms: 0 };
    entry.n++;
    entry.ms += Number(match[2]);
    by.set(key, entry);
  }
  return [...by].map(([key, { n, ms }]) => `${key} ${n} × ${(ms / n).toFixed(1)} ms`).join('; ') || 'no GC lines';
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
