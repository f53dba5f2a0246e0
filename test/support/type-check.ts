import { join } from 'node:path';
import ts from 'typescript';

/**
 * `tsc -p <config> --noEmit` for one directory, as a function that can run many times: each run
 * reports what tsc would, and reuses the files the runs before it parsed and bound that did not
 * change (the node_modules typings, mostly), and the diagnostics of the files a change cannot affect.
 * why: a tsc of both apps costs ~15 CPU-s here, most of it loading the same typings again; a check
 * after removing a folder costs a fraction of that this way (what `tsc --watch` does).
 *
 * With `report`, the run checks and reports only the files of that other config (`tsc -p <report>`'s
 * files), in the program of `config`: a later run of `config` then checks only what is left and what
 * changed. why: `tsconfig.build.json`'s files are a subset of `tsconfig.json`'s, and a run of another
 * config reuses nothing of the last one's checks (~20 CPU-s for the whole project again). The one
 * difference from `tsc -p <report>`: the program has `config`'s compiler options (the whole
 * project's `types`, Jest's globals among them), which `npm run build` checks the apps without.
 */
export function typeChecker(root: string): (config: string, options?: { report?: string }) => string {
  const parsed = new Map<string, { text: string; file: ts.SourceFile }>();
  const previous = new Map<string, ts.EmitAndSemanticDiagnosticsBuilderProgram>();
  const formatHost: ts.FormatDiagnosticsHost = { getCanonicalFileName: (f) => f, getCurrentDirectory: () => root, getNewLine: () => '\n' };
  const parse = (config: string) =>
    ts.getParsedCommandLineOfConfigFile(join(root, config), { noEmit: true }, {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (d) => {
        throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
      },
    })!;
  return (config, { report } = {}) => {
    const { options, fileNames, errors } = parse(config);
    const host = ts.createIncrementalCompilerHost(options);
    const read = host.getSourceFile.bind(host);
    host.getSourceFile = (fileName, languageVersion, onError, shouldCreate) => {
      const text = ts.sys.readFile(fileName);
      const key = `${fileName}\0${JSON.stringify(languageVersion)}`;
      const known = parsed.get(key);
      if (text !== undefined && known?.text === text) return known.file;
      const file = read(fileName, languageVersion, onError, shouldCreate);
      if (file && text !== undefined) parsed.set(key, { text, file });
      return file;
    };
    const program = ts.createEmitAndSemanticDiagnosticsBuilderProgram(fileNames, options, host, previous.get(config), errors);
    previous.set(config, program);
    const reported = report === undefined ? undefined : new Set(parse(report).fileNames);
    const files = reported && program.getSourceFiles().filter((file) => reported.has(file.fileName));
    if (files && files.length !== reported!.size) throw new Error(`${report}'s files are not all in ${config}'s program`);
    const diagnostics = [
      ...program.getConfigFileParsingDiagnostics(),
      ...program.getOptionsDiagnostics(),
      ...program.getGlobalDiagnostics(),
      ...(files
        ? files.flatMap((file) => [...program.getSyntacticDiagnostics(file), ...program.getSemanticDiagnostics(file)])
        : [...program.getSyntacticDiagnostics(), ...program.getSemanticDiagnostics()]),
    ];
    return ts.formatDiagnostics(diagnostics, formatHost);
  };
}
