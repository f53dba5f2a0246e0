import { spawnSync, SpawnSyncReturns } from 'node:child_process';
import { cpSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import ts from 'typescript';
import { runEnv } from './test-run';

const ROOT = join(__dirname, '..', '..');
/** What `nest build` needs; node_modules is linked, not copied. */
const SOURCES = ['apps', 'libs', 'package.json', 'nest-cli.json', 'tsconfig.json', 'tsconfig.build.json'];

/** Runs `command` to completion; throws with its output unless it exits 0. */
function run(command: string, args: string[], cwd: string, timeout = 60_000): string {
  const result = spawnSync(command, args, { cwd, encoding: 'utf8', timeout });
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} in ${cwd} failed:\n${result.stdout}\n${result.stderr}`);
  return result.stdout;
}

/** The files git knows in `dir`: tracked, plus new ones not ignored. */
function gitFiles(dir: string): string[] {
  const listed = run('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], dir).split('\0');
  return [...new Set(listed.filter(Boolean))].filter((file) => lstatSync(join(dir, file), { throwIfNoEntry: false })?.isFile());
}

/**
 * A copy of this repository in a temporary directory, for tests that build and run a changed
 * release of the apps next to the current one (a version bump during a rolling update), or run the
 * template's own scripts on a clean copy.
 */
export class RepoCopy {
  /** The files edit() changed: build() compiles them again. */
  private readonly edited = new Set<string>();

  private constructor(readonly root: string) {}

  /**
   * By default only the sources `nest build` needs. With `project`, every file git knows here (tracked,
   * or new and not ignored) as it is in the working tree, in a git repository of its own with all of
   * them added: what a clone of this tree would hold, uncommitted work included.
   */
  static create(name: string, { project = false }: { project?: boolean } = {}): RepoCopy {
    const root = mkdtempSync(join(tmpdir(), `nest-offload-${name}-`));
    try {
      if (project) {
        for (const file of gitFiles(ROOT)) {
          mkdirSync(dirname(join(root, file)), { recursive: true });
          cpSync(join(ROOT, file), join(root, file));
        }
        run('git', ['init', '-q'], root);
        // why before linking node_modules: .gitignore's `node_modules/` matches a directory, not a symlink.
        run('git', ['add', '-A'], root);
      } else {
        for (const entry of SOURCES) cpSync(join(ROOT, entry), join(root, entry), { recursive: true });
      }
      symlinkSync(join(ROOT, 'node_modules'), join(root, 'node_modules'), 'dir');
    } catch (error) {
      rmSync(root, { recursive: true, force: true });
      throw error;
    }
    return new RepoCopy(root);
  }

  /** The files git knows in the copy (of a `project` copy). */
  files(): string[] {
    return gitFiles(this.root);
  }

  read(file: string): string {
    return readFileSync(join(this.root, file), 'utf8');
  }

  exists(file: string): boolean {
    return existsSync(join(this.root, file));
  }

  /** Replaces `from` with `to` in `file`; throws unless `from` occurs exactly once, so a stale edit fails loudly. */
  edit(file: string, from: string | RegExp, to: string): void {
    const path = join(this.root, file);
    const text = readFileSync(path, 'utf8');
    const count = typeof from === 'string' ? text.split(from).length - 1 : (text.match(new RegExp(from.source, `${from.flags.replace('g', '')}g`)) ?? []).length;
    if (count !== 1) throw new Error(`${file}: expected exactly one ${String(from)}, found ${count}`);
    writeFileSync(path, text.replace(from, to));
    this.edited.add(file);
  }

  /** Runs `command` in the copy and returns how it ended, whatever its exit code. */
  exec(command: string, args: string[], { env = {}, timeoutMs = 180_000 }: { env?: Record<string, string | undefined>; timeoutMs?: number } = {}): SpawnSyncReturns<string> {
    // why not the test's own environment: a nested Jest would take Jest's variables for its own.
    // why a TMPDIR of the copy's own: what its tools cache there (npm's compile cache, a nested Jest's) goes with it.
    const base = { PATH: process.env.PATH, HOME: process.env.HOME ?? tmpdir(), ...runEnv(), TMPDIR: this.tmp(), NODE_ENV: 'test', npm_config_update_notifier: 'false' };
    return spawnSync(command, args, { cwd: this.root, encoding: 'utf8', timeout: timeoutMs, env: { ...base, ...env } });
  }

  /** A temp dir beside the copy (not in it: git would list what lands there), removed with it. */
  private tmp(): string {
    const dir = `${this.root}-tmp`;
    mkdirSync(dir, { recursive: true });
    return dir;
  }

  /**
   * The copy's dist/ as `nest build` would make it, for a copy changed only by edit(): this tree's
   * build (`npm run build` made it for the other suites) with the edited files compiled again, one by
   * one. why not `nest build` in the copy: it costs ~17 CPU-s, most of it loading the program's
   * types; the suites that edit a copy check what the changed apps do, and `npm run lint` type-checks
   * the sources they start from. An edit that imports `@app/…` gets its path rewritten as nest's does.
   */
  build(): void {
    const dist = join(ROOT, 'dist');
    if (!existsSync(join(dist, 'apps'))) throw new Error(`${dist} holds no build: run \`npm run build\` first`);
    cpSync(dist, join(this.root, 'dist'), { recursive: true });
    const config = ts.getParsedCommandLineOfConfigFile(join(this.root, 'tsconfig.build.json'), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: (d) => { throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n')); } })!;
    for (const file of this.edited) {
      const out = join(this.root, 'dist', file.replace(/\.ts$/, '.js'));
      const { outputText, diagnostics } = ts.transpileModule(this.read(file), { compilerOptions: { ...config.options, sourceMap: false }, fileName: join(this.root, file), reportDiagnostics: true });
      if (diagnostics?.length) throw new Error(`${file}: ${diagnostics.map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n')).join('; ')}`);
      const lib = (name: string) => relative(dirname(out), join(this.root, 'dist', 'libs', name, 'src')).replace(/^(?!\.)/, './');
      writeFileSync(out, outputText.replace(/require\("@app\/([a-z-]+)"\)/g, (_, name: string) => `require("${lib(name)}")`));
      rmSync(`${out}.map`, { force: true });
    }
  }

  remove(): void {
    rmSync(this.root, { recursive: true, force: true });
    rmSync(`${this.root}-tmp`, { recursive: true, force: true });
  }
}
