import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { JobRegistry } from '@app/jobs';
import { startStack, stackEnv } from './support/apps';
import { submit } from './support/http';
import { waitFor } from './support/wait';

/** Linux scheduling policy numbers, as /proc/<pid>/task/<tid>/stat reports them. */
const SCHED_OTHER = 0;
const SCHED_IDLE = 5;

/** A /proc stat file's name (2nd field) and field `n` (1-based). */
function stat(path: string, n: number): { name: string; field: string } {
  const text = readFileSync(path, 'utf8');
  // why split after ") ": the name in parentheses may hold spaces; the 3rd field follows it.
  return { name: text.slice(text.indexOf('(') + 1, text.lastIndexOf(') ')), field: text.slice(text.lastIndexOf(') ') + 2).split(' ')[n - 3] };
}

/** Each thread of `pid`: its tid, name and scheduling policy (the 41st field of its stat). */
function threads(pid: number): Array<{ tid: number; name: string; policy: number }> {
  return readdirSync(`/proc/${pid}/task`).map((tid) => {
    const { name, field } = stat(`/proc/${pid}/task/${tid}/stat`, 41);
    return { tid: Number(tid), name, policy: Number(field) };
  });
}

/**
 * WORKER_SCHED=idle (the image's setting) puts every pool thread, and only them, on SCHED_IDLE, so
 * job code runs on CPU time nothing else wants; the worker's event loop stays on SCHED_OTHER. The
 * apps' own default, for bare hosts where other busy processes share the group, is SCHED_OTHER.
 */
describe('pool threads on SCHED_IDLE', () => {
  const onLinux = process.platform === 'linux' ? it : it.skip;

  onLinux('runs jobs on SCHED_IDLE pool threads, the event loop on SCHED_OTHER', async () => {
    const { api, worker, stop } = await startStack(stackEnv('sched-idle', { WORKER_THREADS: '2', WORKER_SCHED: 'idle' }));
    try {
      const { body } = await submit(api.url, 'chaos', { mode: 'spin', ms: 50, tag: 'sched' }, { wait: 30 });
      expect(body).toMatchObject({ status: 'completed' });
      // why wait: the pool starts its two threads at once, but one job needs only one; on a busy
      // machine the other may still be loading (a thread enters SCHED_IDLE before it takes a task).
      await waitFor(() => threads(worker.pid).filter((t) => t.policy === SCHED_IDLE).length >= 2, { what: 'both pool threads up' }).catch(() => undefined);
      // First, so that a probe which gave up says why (a warning names WORKER_SCHED).
      expect(worker.logs.filter((l) => /WORKER_SCHED/.test(l.msg))).toEqual([]);
      const all = threads(worker.pid);
      expect(all.find((t) => t.tid === worker.pid)?.policy).toBe(SCHED_OTHER);
      const idle = all.filter((t) => t.policy === SCHED_IDLE);
      // Exactly the pool's threads: libuv's, V8's and the main thread keep the default policy.
      expect(idle).toHaveLength(2);
      expect(all.filter((t) => t.policy !== SCHED_IDLE).every((t) => t.policy === SCHED_OTHER)).toBe(true);
    } finally {
      await stop();
    }
  });

  /**
   * The start-up probe must not wait for spare CPU: a probe that ran a program on SCHED_IDLE timed
   * out on a busy CI host (10 s for `true` beside six busy Node processes) and left the pool on
   * SCHED_OTHER. Here one core is given 20 busy loops and the probe runs on that core only; it
   * failed (ETIMEDOUT, 10–13.5 s) when it ran `chrt --idle 0 true`.
   */
  onLinux('finds SCHED_IDLE usable on a core that has no CPU to spare', async () => {
    // why started first, waiting for a line: its own start-up would take a second on the crowded core.
    const module = './dist/apps/worker/src/pool/thread-sched.js';
    const probe = spawn('taskset', ['-c', '0', process.execPath, '-e', `const { schedIdleUnavailable } = require('${module}'); console.log('ready'); process.stdin.once('data', () => console.log(schedIdleUnavailable() ?? 'usable'))`], { stdio: 'pipe' });
    let out = '';
    probe.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    probe.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()));
    const exited = new Promise((resolve) => probe.once('exit', resolve));
    const loops: ReturnType<typeof spawn>[] = [];
    try {
      await waitFor(() => out.startsWith('ready\n'), { what: 'the probe to start' });
      loops.push(...Array.from({ length: 20 }, () => spawn('taskset', ['-c', '0', 'sh', '-c', 'while :; do :; done'], { stdio: 'ignore' })));
      // Each loop has spun for a while (2 clock ticks of user time, the 14th field of its stat) in its shell.
      const spun = (pid?: number) => {
        const { name, field } = stat(`/proc/${pid}/stat`, 14);
        return name === 'sh' && Number(field) >= 2;
      };
      await waitFor(() => loops.every((loop) => spun(loop.pid)), { what: 'the busy loops' });
      probe.stdin.end('go\n');
      await exited;
      expect(out).toBe('ready\nusable\n');
    } finally {
      for (const loop of loops) loop.kill('SIGKILL');
      probe.kill('SIGKILL');
    }
  });

  /**
   * A type whose run loads a native module that works on threads of its own (the image example, found
   * by its shape: one image file in, files out), or none when a service removed it.
   */
  const native = JobRegistry.forConfig({ chaosJobs: false })
    .list()
    .find((def) => def.nativeModules.length > 0 && def.returnsFiles && Object.values(def.files).some((file) => file.accept.includes('image/png')));

  // why: sharp hands the image to libvips's own threads, started from libuv's on SCHED_OTHER; the pool thread only waits for them.
  (process.platform === 'linux' && native ? it : it.skip)('puts the threads a native module starts during a run on SCHED_IDLE too, and only those', async () => {
    const { api, worker, stop } = await startStack(stackEnv('sched-native', { WORKER_THREADS: '2', WORKER_SCHED: 'idle' }));
    try {
      const sharp = require('sharp') as (options: object) => { png(): { toBuffer(): Promise<Buffer> } };
      const image = await sharp({ create: { width: 800, height: 600, channels: 3, background: '#336699' } }).png().toBuffer();
      const body = new FormData();
      body.set('input', JSON.stringify({ width: 64, format: 'png' }));
      body.set(Object.keys(native!.files)[0], new Blob([new Uint8Array(image)], { type: 'image/png' }), 'image.png');
      const res = await fetch(`${api.url}/v1/jobs/${native!.name}`, { method: 'POST', body, headers: { prefer: 'wait=60' } });
      expect(await res.json()).toMatchObject({ status: 'completed' });
      const all = threads(worker.pid);
      const nodes = /^(node-|libuv-worker$|WorkerThread$|DelayedTaskSche|SignalInspector)/;
      const started = all.filter((t) => t.tid !== worker.pid && !nodes.test(t.name));
      expect(started.length).toBeGreaterThan(0);
      expect(started.filter((t) => t.policy !== SCHED_IDLE)).toEqual([]);
      // Node's own threads keep theirs: libuv's, V8's and the main thread.
      expect(all.filter((t) => t.tid === worker.pid || /^(node-|libuv-worker$)/.test(t.name)).every((t) => t.policy === SCHED_OTHER)).toBe(true);
    } finally {
      await stop();
    }
  });

  onLinux('leaves every thread on SCHED_OTHER by default (WORKER_SCHED unset)', async () => {
    const env = stackEnv('sched-other', { WORKER_THREADS: '2' });
    expect(env.WORKER_SCHED).toBeUndefined();
    const { api, worker, stop } = await startStack(env);
    try {
      const { body } = await submit(api.url, 'chaos', { mode: 'spin', ms: 50, tag: 'sched-other' }, { wait: 30 });
      expect(body).toMatchObject({ status: 'completed' });
      expect(threads(worker.pid).every((t) => t.policy === SCHED_OTHER)).toBe(true);
    } finally {
      await stop();
    }
  });
});
