import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import ts from 'typescript';

/**
 * Compiles the bench (and the project code it imports) into `outDir` as bench/tsconfig.json lays it
 * out, each file transpiled on its own. why not tsc: a program of the bench loads every type the
 * project uses (~18 CPU-s, twice in `npm test`: the bench smoke and the demo); `npm run lint` type-checks
 * the same files. The e2e tests use a directory of their own under bench/, so node_modules still resolves.
 */
export function compileBench(root: string, outDir: string): void {
  const config = ts.getParsedCommandLineOfConfigFile(join(root, 'bench', 'tsconfig.json'), { outDir }, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (d) => {
      throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
    },
  })!;
  const options = config.options;
  // The bench's files and, through their imports (paths included), every source file of ours they reach.
  const files = new Set(config.fileNames.filter((file) => !file.endsWith('.d.ts')));
  const pending = [...files];
  for (let file = pending.pop(); file !== undefined; file = pending.pop()) {
    for (const { fileName } of ts.preProcessFile(readFileSync(file, 'utf8')).importedFiles) {
      const resolved = ts.resolveModuleName(fileName, file, options, ts.sys).resolvedModule;
      if (!resolved || resolved.isExternalLibraryImport || resolved.extension !== ts.Extension.Ts || files.has(resolved.resolvedFileName)) continue;
      files.add(resolved.resolvedFileName);
      pending.push(resolved.resolvedFileName);
    }
  }
  for (const file of files) {
    const { outputText, diagnostics } = ts.transpileModule(readFileSync(file, 'utf8'), { compilerOptions: options, fileName: file, reportDiagnostics: true });
    if (diagnostics?.length) throw new Error(`${file}: ${diagnostics.map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n')).join('; ')}`);
    const out = join(outDir, relative(options.rootDir!, file)).replace(/\.ts$/, '.js');
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, outputText);
  }
}
