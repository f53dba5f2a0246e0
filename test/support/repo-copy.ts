import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..');
/** What `nest build` needs; node_modules is linked, not copied. */
const SOURCES = ['apps', 'libs', 'package.json', 'nest-cli.json', 'tsconfig.json', 'tsconfig.build.json'];

/**
 * A copy of this repository's sources in a temporary directory, for tests that build and run a
 * changed release of the apps next to the current one (a version bump during a rolling update).
 */
export class RepoCopy {
  private constructor(readonly root: string) {}

  static create(name: string): RepoCopy {
    const root = mkdtempSync(join(tmpdir(), `nest-offload-${name}-`));
    for (const entry of SOURCES) cpSync(join(ROOT, entry), join(root, entry), { recursive: true });
    symlinkSync(join(ROOT, 'node_modules'), join(root, 'node_modules'), 'dir');
    return new RepoCopy(root);
  }

  /** Replaces `from` with `to` in `file`; throws unless `from` occurs exactly once, so a stale edit fails loudly. */
  edit(file: string, from: string | RegExp, to: string): void {
    const path = join(this.root, file);
    const text = readFileSync(path, 'utf8');
    const count = typeof from === 'string' ? text.split(from).length - 1 : (text.match(new RegExp(from, 'g')) ?? []).length;
    if (count !== 1) throw new Error(`${file}: expected exactly one ${String(from)}, found ${count}`);
    writeFileSync(path, text.replace(from, to));
  }

  /** `nest build` in the copy (its dist/ then holds the changed apps). */
  build(): void {
    const nest = join(ROOT, 'node_modules', '@nestjs', 'cli', 'bin', 'nest.js');
    const result = spawnSync(process.execPath, [nest, 'build'], { cwd: this.root, encoding: 'utf8', timeout: 180_000 });
    if (result.status !== 0) throw new Error(`nest build in ${this.root} failed:\n${result.stdout}\n${result.stderr}`);
  }

  remove(): void {
    rmSync(this.root, { recursive: true, force: true });
  }
}
