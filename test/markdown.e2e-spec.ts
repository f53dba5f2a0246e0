import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startStack, stackEnv } from './support/apps';
import { resultOf, submit } from './support/http';

/**
 * The markdown job type against the built apps: correct, sanitized HTML back, and markdown-it loaded
 * only by the worker's pool threads. A preload (test/support/module-probe.js) records every file of
 * markdown-it each thread of each process resolves or holds.
 */
const PROBE = join(__dirname, 'support', 'module-probe.js');

interface ProbeEntry {
  pid: number;
  thread: string;
  event: 'start' | 'resolved' | 'exit';
  path?: string;
  held?: string[];
}

describe('markdown job type', () => {
  const dir = mkdtempSync(join(tmpdir(), 'nest-offload-probe-'));
  const probeFile = join(dir, 'modules.jsonl');
  let stack: Awaited<ReturnType<typeof startStack>> | undefined;

  beforeAll(async () => {
    stack = await startStack(
      stackEnv('markdown', {
        NODE_OPTIONS: `--require "${PROBE}"`,
        MODULE_PROBE_FILE: probeFile,
        MODULE_PROBE_PACKAGES: 'markdown-it',
        // The large result goes here, removed with the dir.
        BLOB_STORE_URL: `file://${join(dir, 'blobs')}`,
      }),
    );
  });

  afterAll(async () => {
    await stack?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('renders sanitized HTML on pool threads; the API and the worker main thread never load markdown-it', async () => {
    const { api, worker } = stack!;
    const cases: Array<[string, string]> = [
      ['# Hello\n\n*world* and https://example.org', '<h1>Hello</h1>\n<p><em>world</em> and <a href="https://example.org">https://example.org</a></p>\n'],
      ['<script>alert(1)</script>', '<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>\n'],
      ['[click](javascript:alert(1)) <img src=x onerror=alert(1)>', '<p>[click](javascript:alert(1)) &lt;img src=x onerror=alert(1)&gt;</p>\n'],
      // The largest input, in one of the slowest shapes measured: it must finish within the type's timeout.
      ['|a|b|\n|-|-|\n'.repeat(200_000 / 12), ''],
    ];
    const replies = await Promise.all(cases.map(([markdown]) => submit(api.url, 'markdown', { markdown }, { wait: 30 })));
    for (const [i, reply] of replies.entries()) {
      expect({ status: reply.status, state: reply.body.status, error: reply.body.error }).toEqual({ status: 200, state: 'completed', error: undefined });
      // The table's HTML is over 64 KiB: it comes from the blob store.
      if (cases[i][1]) expect(reply.body.result).toEqual({ html: cases[i][1] });
      else expect((await resultOf(api.url, reply.body)).html).toMatch(/^<table>/);
    }

    const tooLong = await submit(api.url, 'markdown', { markdown: 'x'.repeat(200_001) });
    expect(tooLong.status).toBe(400);
    expect(tooLong.body.errors).toEqual([expect.objectContaining({ field: 'markdown' })]);

    await stack!.stop();
    expect([await api.exited, await worker.exited]).toEqual([0, 0]);
    const entries = readFileSync(probeFile, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as ProbeEntry);
    const mainOf = (pid: number) => entries.filter((e) => e.pid === pid && e.thread === 'main');
    for (const app of [api, worker]) {
      // The probe ran on the app's main thread from start to exit, and saw no file of markdown-it there.
      expect(mainOf(app.pid).map((e) => e.event)).toEqual(['start', 'exit']);
      expect(mainOf(app.pid)[1].held).toEqual([]);
    }
    // The control: the same probe saw the pool threads load it.
    const threads = entries.filter((e) => e.pid === worker.pid && e.thread !== 'main' && e.event === 'resolved');
    expect(threads.map((e) => e.path)).toContainEqual(expect.stringMatching(/node_modules\/markdown-it\/dist\/markdown-it\.cjs\.js$/));
  });
});
