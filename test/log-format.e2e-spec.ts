import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AppEnv, AppProcess, startAll, stackEnv } from './support/apps';
import { runEnv } from './support/test-run';
import { freePort, waitFor } from './support/wait';

const ROOT = join(__dirname, '..');
const WORKER = 'dist/apps/worker/src/main.js';
const HIDE = join(__dirname, 'support', 'hide-packages.js');
const PROBE = join(__dirname, 'support', 'module-probe.js');
const ANSI = /\x1b\[[0-9;]*m/;
const plain = (line: string) => line.replace(/\x1b\[[0-9;]*m/g, '');
/** The line the worker writes once it consumes its queues, as pino-pretty shows it. */
const PRETTY = /^\[\d\d:\d\d:\d\d\.\d{3}\] INFO \(worker\): Bootstrap: worker consuming queues /;

/**
 * The built worker, its stdout a pseudo-terminal (`tty`, as under `npm start`) or a pipe (as under
 * Docker, Kubernetes or a test), started once it has said that it consumes its queues.
 */
async function startWorker(env: AppEnv, { tty }: { tty: boolean }): Promise<AppProcess> {
  const port = await freePort();
  // why TERM with a terminal: a terminal sets it, and colours depend on it.
  const full = { PATH: process.env.PATH, ...runEnv(), ...(tty ? { TERM: 'xterm-256color' } : {}), HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env, WORKER_PORT: String(port) };
  // why script(1): it runs the command on a pseudo-terminal of its own (and stops it when stopped itself).
  const [command, args] = tty ? ['script', ['-qec', `exec "${process.execPath}" ${WORKER}`, '/dev/null']] : [process.execPath, [WORKER]];
  const app = new AppProcess('worker', port, spawn(command, args, { cwd: ROOT, env: full, stdio: ['ignore', 'pipe', 'pipe'] }), env);
  try {
    await waitFor(() => text(app).includes('worker consuming queues'), { timeoutMs: 20_000, what: 'the worker consuming its queues' });
  } catch (error) {
    await app.stop();
    throw new Error(`${String(error)}\n${text(app)}`);
  }
  return app;
}

/** Everything the app wrote, JSON lines and others, without colours. */
const text = (app: AppProcess) => plain([...app.logs.map((line) => JSON.stringify(line)), ...app.stderr].join('\n'));
/** Lines that are not JSON (pty line ends and the blank lines between pretty entries aside). */
const readable = (app: AppProcess) => app.stderr.flatMap((chunk) => chunk.split('\n')).map((line) => line.replace(/\r$/, '')).filter(Boolean);

describe('log lines: readable on a terminal outside production, JSON everywhere else', () => {
  const probeDir = mkdtempSync(join(tmpdir(), 'log-format-'));
  const probeFile = join(probeDir, 'modules.jsonl');
  let apps: Record<'terminal' | 'production' | 'forcedJson' | 'piped' | 'forcedPretty' | 'pruned', AppProcess>;

  beforeAll(async () => {
    const dev = (name: string, extra: AppEnv = {}) => stackEnv(`log-format-${name}`, { NODE_ENV: 'development', ...extra });
    const started = await startAll([
      startWorker(dev('terminal'), { tty: true }),
      startWorker(dev('production', { NODE_ENV: 'production', CHAOS_JOBS: 'false' }), { tty: true }),
      startWorker(dev('json', { LOG_FORMAT: 'json' }), { tty: true }),
      startWorker(dev('piped', { NODE_OPTIONS: `--require "${PROBE}"`, MODULE_PROBE_FILE: probeFile, MODULE_PROBE_PACKAGES: 'pino-pretty' }), { tty: false }),
      startWorker(dev('pretty', { LOG_FORMAT: 'pretty' }), { tty: false }),
      startWorker(dev('pruned', { NODE_OPTIONS: `--require "${HIDE}"`, HIDE_PACKAGES: 'pino-pretty' }), { tty: true }),
    ]);
    const [terminal, production, forcedJson, piped, forcedPretty, pruned] = started;
    apps = { terminal, production, forcedJson, piped, forcedPretty, pruned };
  }, 60_000);

  afterAll(async () => {
    await Promise.all(Object.values(apps ?? {}).map((app) => app.stop()));
    rmSync(probeDir, { recursive: true, force: true });
  });

  it('prints readable, coloured lines on a terminal (npm start)', () => {
    const { terminal } = apps;
    expect(terminal.logs).toEqual([]);
    expect(terminal.stderr.join('')).toMatch(ANSI);
    expect(readable(terminal).map(plain).filter((line) => PRETTY.test(line))).toHaveLength(1);
  });

  it('prints JSON lines on a terminal in production, when LOG_FORMAT=json, and without a terminal', () => {
    for (const app of [apps.production, apps.forcedJson, apps.piped]) {
      expect(readable(app)).toEqual([]);
      expect(app.logs.find((line) => /worker consuming queues/.test(line.msg))).toMatchObject({ level: 30, name: 'worker', context: 'Bootstrap' });
    }
  });

  it('loads pino-pretty only for readable lines', () => {
    const events = readFileSync(probeFile, 'utf8').trim().split('\n').map((line) => JSON.parse(line) as { event: string; path?: string });
    expect(events.filter((e) => e.event === 'start').length).toBeGreaterThan(0);
    expect(events.filter((e) => e.event === 'resolved')).toEqual([]);
  });

  it('prints readable lines without a terminal when LOG_FORMAT=pretty, uncoloured', () => {
    const { forcedPretty } = apps;
    expect(forcedPretty.logs).toEqual([]);
    expect(forcedPretty.stderr.join('')).not.toMatch(ANSI);
    expect(readable(forcedPretty).filter((line) => PRETTY.test(line))).toHaveLength(1);
  });

  it('falls back to JSON, saying so once, where pino-pretty is not installed', () => {
    const { pruned } = apps;
    expect(readable(pruned)).toEqual([]);
    expect(pruned.logs.filter((line) => /pino-pretty is not installed/.test(line.msg))).toEqual([expect.objectContaining({ level: 40, name: 'worker' })]);
    expect(pruned.logs.some((line) => /worker consuming queues/.test(line.msg))).toBe(true);
  });
});
