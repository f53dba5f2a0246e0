import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

/**
 * Compiles the bench (and the project code it imports) into `outDir` with bench/tsconfig.json.
 * The e2e tests use a directory of their own under bench/, so node_modules still resolves.
 */
export function compileBench(root: string, outDir: string): void {
  execFileSync(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(root, 'bench', 'tsconfig.json'), '--outDir', outDir], {
    cwd: root,
    stdio: 'pipe',
  });
}
