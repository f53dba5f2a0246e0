#!/usr/bin/env node
// `npm run new:job -- <name> [--files]`: adds a job type. Writes libs/jobs/src/<name>.job.ts (a
// runnable example with progress; with --files, one that takes a file and returns one), its unit
// test, the registry line and its row in docs/job-types.md, so that
// `npm run build` and `npm test` pass right away. Refuses invalid names and existing types, and never
// overwrites a file: everything is checked before anything is written.
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const root = join(import.meta.dirname ?? new URL('.', import.meta.url).pathname, '..');
const jobsDir = 'libs/jobs/src';
const registryFile = `${jobsDir}/registry.ts`;
const docsFile = 'docs/job-types.md';
const read = (file) => readFileSync(join(root, file), 'utf8');

function fail(message) {
  console.error(`new:job: ${message}`);
  process.exit(1);
}

/** JOB_NAME as defineJob checks it, read from its source so the two never disagree. */
function jobNameRule() {
  const literal = /^export const JOB_NAME = \/(.+)\/([a-z]*);$/m.exec(read(`${jobsDir}/define-job.ts`));
  if (!literal) fail(`${jobsDir}/define-job.ts no longer declares \`export const JOB_NAME = /…/;\`; update scripts/new-job.mjs`);
  return new RegExp(literal[1], literal[2]);
}

// Words that cannot name a const, or that CommonJS output reserves at the top of a module.
const RESERVED = new Set(
  ('arguments await break case catch class const continue debugger default delete do else enum eval export exports extends false ' +
    'finally for function if implements import in instanceof interface let module new null package private protected public require ' +
    'return static super switch this throw true try typeof undefined var void while with yield globalThis process console')
    .split(' '),
);
/** Identifiers the generated files use themselves (the export must not shadow one). */
const TEMPLATE_NAMES = (
  'z defineJob PROGRESS_EVERY_MS longestChain below onProgress now best lastReport start steps x time percent ' +
  'ctx clock reports input p i describe it expect SILENT_LOG ' +
  'createReadStream Readable createGzip gunzipSync MAX_BYTES gzipped contentOf level document source written chunks chunk counted bytes run pdf stored'
).split(' ');

const camelCase = (name) =>
  name
    .split('-')
    .filter(Boolean)
    .map((word, i) => (i === 0 ? word : word[0].toUpperCase() + word.slice(1)))
    .join('');

/** Every identifier registry.ts imports or declares at the top level. */
function registryNames(source) {
  const names = new Set();
  for (const [, list] of source.matchAll(/^import (?:type )?\{([^}]*)\}/gm)) {
    for (const part of list.split(',')) {
      const name = part.trim().replace(/^type\s+/, '').split(/\s+as\s+/).pop();
      if (name) names.add(name);
    }
  }
  for (const [, name] of source.matchAll(/^export (?:const|let|class|type|interface|function) ([A-Za-z_$][\w$]*)/gm)) names.add(name);
  return names;
}

/** The file that declares job type `name` (`name: '…'` in a job file), if any. */
function declaringFile(name) {
  const declaration = new RegExp(`\\bname:\\s*['"\`]${name}['"\`]`);
  return readdirSync(join(root, jobsDir))
    .filter((file) => file.endsWith('.ts') && !file.endsWith('.spec.ts'))
    .find((file) => declaration.test(read(`${jobsDir}/${file}`)));
}

function addToRegistry(source, ident, name) {
  const coreJobs = /(export const coreJobs = \[)([\s\S]*?)(\] as const;)/;
  if (!coreJobs.test(source)) fail(`${registryFile} has no \`export const coreJobs = [ … ] as const;\`; add ${ident} to the registry by hand`);
  const imports = [...source.matchAll(/^import [^;]+;$/gm)];
  if (imports.length === 0) fail(`${registryFile} has no imports to add one after`);
  const last = imports.at(-1);
  const afterImports = last.index + last[0].length;
  const withImport = `${source.slice(0, afterImports)}\nimport { ${ident} } from './${name}.job';${source.slice(afterImports)}`;
  const [whole, open, inner, close] = coreJobs.exec(withImport);
  let entries;
  if (inner.includes('\n')) {
    // One entry per line: keep that layout.
    const indent = /\n([ \t]+)\S/.exec(inner)?.[1] ?? '  ';
    const body = inner.replace(/\s*$/, '');
    entries = `${body}${body.endsWith(',') ? '' : ','}\n${indent}${ident},\n`;
  } else {
    entries = inner.trim() ? `${inner.replace(/,?\s*$/, '')}, ${ident}` : ident;
  }
  return withImport.replace(whole, () => `${open}${entries}${close}`);
}

const ROW = (name) =>
  `| \`${name}\` | \`{below}\`: integer 2–10^7. Generated example (the start below \`below\` with the longest Collatz chain); ` +
  `replace it with what \`${name}\` does. | \`{start, steps}\` |`;
const FILES_ROW = (name) =>
  `| \`${name}\` | \`{level?}\`: gzip level 1–9 (6); and the file \`document\` (a PDF, at most 64 MB), sent as \`multipart/form-data\` ([Files](#files)). ` +
  `Generated example (the document gzipped); replace it with what \`${name}\` does. | \`{bytes, gzipBytes}\`, and the result file \`document.pdf.gz\` |`;

/** The guide with a row for `name` at the end of its "The job types" table, or undefined without such a table. */
function addToDocs(guide, name, row) {
  const lines = guide.split('\n');
  const section = lines.findIndex((line) => /^## The job types\b/.test(line));
  if (section < 0) return undefined;
  let header = -1;
  for (let i = section + 1; i < lines.length && !lines[i].startsWith('## '); i++) {
    if (/^\| Type \|/.test(lines[i])) {
      header = i;
      break;
    }
  }
  if (header < 0) return undefined;
  let end = header + 2;
  while (end < lines.length && lines[end].startsWith('|')) end++;
  lines.splice(end, 0, row);
  return lines.join('\n');
}

const jobFile = (name, ident) => `import { z } from 'zod';
import { defineJob } from './define-job';

// Generated by \`npm run new:job -- ${name}\`: a runnable example to replace with the real work. Keep
// \`run\` pure: it runs on a pool thread (no Nest, no Redis); load heavy libraries inside it.

const PROGRESS_EVERY_MS = 100;

/**
 * The work itself, kept pure and exported so the spec tests it without a pool: the start below
 * \`below\` whose Collatz sequence takes the most steps to reach 1.
 */
export function longestChain(
  below: number,
  onProgress: (percent: number) => void = () => {},
  now: () => number = Date.now,
): { start: number; steps: number } {
  let best = { start: 1, steps: 0 };
  let lastReport = now();
  for (let start = 2; start < below; start++) {
    let steps = 0;
    for (let x = start; x !== 1; steps++) x = x % 2 === 0 ? x / 2 : 3 * x + 1;
    if (steps > best.steps) best = { start, steps };
    // why every 1024 starts: reading the clock on each one would cost more than the work.
    if ((start & 0x3ff) !== 0) continue;
    const time = now();
    if (time - lastReport >= PROGRESS_EVERY_MS) {
      lastReport = time;
      onProgress(Math.floor((start / below) * 100));
    }
  }
  return best;
}

export const ${ident} = defineJob({
  name: '${name}',
  version: 1, // bump when run() would give a different result for the same input: it is in the cache key
  description: 'TODO: say what ${name} computes. (Generated example: the start below \`below\` with the longest Collatz chain.)',
  // why 10^7: every value on the way stays far below 2^53, so plain numbers are exact.
  input: z.strictObject({ below: z.int().min(2).max(10_000_000) }),
  examples: [{ below: 100_000 }], // shown in the API docs, run by \`npm run test:image\`
  output: z.object({ start: z.int(), steps: z.int() }),
  timeoutMs: 60_000, // capped by JOB_TIMEOUT_MS
  cacheTtlSeconds: 3600, // 0 disables caching
  run: ({ below }, ctx) => longestChain(below, (percent) => ctx.progress(percent)),
});
`;

const filesJobFile = (name, ident) => `import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';
import { createGzip } from 'node:zlib';
import { z } from 'zod';
import { defineJob, type InputFile } from './define-job';

// Generated by \`npm run new:job -- ${name} --files\`: a runnable example of a type that takes a file
// and returns one, to replace with the real work. Keep \`run\` pure: it runs on a pool thread (no
// Nest, no Redis); load heavy libraries inside it. Files move as streams: none is held whole here.

/** The largest document it takes; the API cuts a larger one off at this size with 413. */
const MAX_BYTES = 64 * 1024 ** 2;

/** The file's bytes as a stream: from its path with a file store, else as read from the store. */
export function contentOf(document: InputFile): AsyncIterable<Uint8Array> {
  return document.path ? createReadStream(document.path) : Readable.from((async function* () { yield await document.read(); })());
}

export const ${ident} = defineJob({
  name: '${name}',
  version: 1, // bump when run() would give a different result for the same input: it is in the cache key
  description: 'TODO: say what ${name} does. (Generated example: takes a PDF \`document\` and returns it gzipped as \`document.pdf.gz\`.)',
  input: z.strictObject({ level: z.int().min(1).max(9).default(6) }),
  // Each file it takes: its size limit, and the types its first bytes may show (FILE_TYPES in file-types.ts).
  files: { document: { maxBytes: MAX_BYTES, accept: ['application/pdf'] } },
  returnsFiles: true, // its run writes files with ctx.writeFile
  output: z.object({ bytes: z.int(), gzipBytes: z.int() }),
  timeoutMs: 60_000, // capped by JOB_TIMEOUT_MS
  cacheTtlSeconds: 3600, // 0 disables caching; a file's SHA-256 is in the cache key
  run: async ({ level }, ctx) => {
    const document = ctx.files!.document;
    let gzipBytes = 0;
    async function* counted(chunks: AsyncIterable<Buffer>) {
      for await (const chunk of chunks) {
        gzipBytes += chunk.length;
        yield chunk;
      }
    }
    // Stored from this thread under its SHA-256 as it is made; the job view lists it with its download URL.
    await ctx.writeFile!('document.pdf.gz', counted(Readable.from(contentOf(document)).pipe(createGzip({ level }))), 'application/gzip');
    return { bytes: document.bytes, gzipBytes };
  },
});
`;

const filesSpecFile = (name, ident) => `import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { coreJobs, JobRegistry } from './registry';
import { type JobContext, SILENT_LOG } from './define-job';
import { ${ident} } from './${name}.job';

const pdf = Buffer.from('%PDF-1.4\\n' + 'a line of a document\\n'.repeat(1000));

/** What a pool thread gives the run: the file (by its path, as with a file store, or read), and where its files go. */
function contextFor(bytes: Buffer, path?: string) {
  const written: Record<string, { bytes: Buffer; contentType: string }> = {};
  const ctx: JobContext = {
    attempt: 1,
    progress: () => undefined,
    log: SILENT_LOG,
    files: { document: { sha256: createHash('sha256').update(bytes).digest('hex'), bytes: bytes.length, contentType: 'application/pdf', path, read: async () => bytes } },
    writeFile: async (name, data, contentType) => {
      const chunks: Uint8Array[] = [];
      for await (const chunk of data instanceof Uint8Array ? [data] : data) chunks.push(chunk);
      written[name] = { bytes: Buffer.concat(chunks), contentType };
    },
  };
  return { ctx, written };
}

describe('${name} job', () => {
  it('returns the document gzipped, read from its path or from the store', async () => {
    const dir = mkdtempSync(join(tmpdir(), '${name}-'));
    try {
      writeFileSync(join(dir, 'document.pdf'), pdf);
      for (const path of [join(dir, 'document.pdf'), undefined]) {
        const { ctx, written } = contextFor(pdf, path);
        const result = await ${ident}.run({ level: 9 }, ctx);
        const stored = written['document.pdf.gz'];
        expect([stored.contentType, gunzipSync(stored.bytes).equals(pdf)]).toEqual(['application/gzip', true]);
        expect(result).toEqual({ bytes: pdf.length, gzipBytes: stored.bytes.length });
        expect(result.gzipBytes).toBeLessThan(pdf.length / 10);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('takes a PDF \`document\` and a level from 1 to 9', () => {
    expect(${ident}.files).toEqual({ document: { maxBytes: 64 * 1024 ** 2, accept: ['application/pdf'] } });
    expect(${ident}.input.parse({})).toEqual({ level: 6 });
    for (const input of [{ level: 0 }, { level: 10 }, { level: 2.5 }, { extra: true }]) expect(${ident}.input.safeParse(input).success).toBe(false);
  });

  it('is registered', () => {
    expect(new JobRegistry(coreJobs).get('${name}')).toBe(${ident});
  });
});
`;

const specFile = (name, ident) => `import { coreJobs, JobRegistry } from './registry';
import { SILENT_LOG } from './define-job';
import { ${ident}, longestChain } from './${name}.job';

const ctx = { attempt: 1, progress: () => undefined, log: SILENT_LOG };

describe('${name} job', () => {
  it('finds the start with the longest Collatz chain below the bound', () => {
    expect(longestChain(2)).toEqual({ start: 1, steps: 0 });
    expect(longestChain(10)).toEqual({ start: 9, steps: 19 });
    expect(${ident}.run({ below: 10_000 }, ctx)).toEqual({ start: 6171, steps: 261 });
    expect(${ident}.output.safeParse(longestChain(1000)).success).toBe(true);
  });

  it('reports rising progress below 100 about every 100 ms', () => {
    let clock = 0;
    const reports: number[] = [];
    longestChain(20_000, (percent) => reports.push(percent), () => (clock += 50));
    expect(reports.length).toBeGreaterThan(5);
    expect(reports.every((p, i) => p >= 0 && p < 100 && (i === 0 || p >= reports[i - 1]))).toBe(true);
  });

  it('accepts an integer bound from 2 to 10^7 and nothing else', () => {
    expect(${ident}.input.parse({ below: 2 })).toEqual({ below: 2 });
    expect(${ident}.input.safeParse({ below: 10_000_000 }).success).toBe(true);
    for (const input of [{}, { below: 1 }, { below: 10_000_001 }, { below: 2.5 }, { below: '10' }, { below: 10, extra: true }]) {
      expect(${ident}.input.safeParse(input).success).toBe(false);
    }
  });

  it('is registered', () => {
    expect(new JobRegistry(coreJobs).get('${name}')).toBe(${ident});
  });
});
`;

function main() {
  const given = process.argv.slice(2);
  const files = given.includes('--files');
  const args = given.filter((arg) => arg !== '--files');
  if (args.length !== 1 || args[0].startsWith('-')) {
    fail(
      `usage: npm run new:job -- <name> [--files]   (e.g. npm run new:job -- collatz-record; --files: a type that takes a file and returns one)` +
        `${given.length ? `; got ${given.map((a) => JSON.stringify(a)).join(' ')}` : ''}`,
    );
  }
  const [name] = args;
  const rule = jobNameRule();
  if (!rule.test(name)) {
    fail(`"${name}" is not a valid job type name: it must match ${rule} (a lowercase letter, then lowercase letters, digits or dashes; at most 63 characters), e.g. "collatz-record"`);
  }
  const file = `${jobsDir}/${name}.job.ts`;
  const spec = `${jobsDir}/${name}.job.spec.ts`;
  const declared = declaringFile(name);
  if (declared) fail(`job type "${name}" already exists (declared in ${jobsDir}/${declared}); pick another name`);
  for (const path of [file, spec]) if (existsSync(join(root, path))) fail(`${path} already exists; nothing was written (remove it or pick another name)`);

  const registry = read(registryFile);
  const taken = new Set([...RESERVED, ...TEMPLATE_NAMES, ...registryNames(registry)]);
  // why the suffix: a name such as "delete" or "all-jobs" would make a reserved word or shadow a registry name.
  const ident = [camelCase(name), `${camelCase(name)}Job`].find((candidate) => !taken.has(candidate));
  if (!ident) fail(`"${name}" gives no free identifier (${camelCase(name)} and ${camelCase(name)}Job are taken in ${registryFile}); pick another name`);
  const newRegistry = addToRegistry(registry, ident, name);
  const docs = existsSync(join(root, docsFile)) ? addToDocs(read(docsFile), name, (files ? FILES_ROW : ROW)(name)) : undefined;

  // why 'wx': fails instead of overwriting, should a file appear after the check above.
  writeFileSync(join(root, file), (files ? filesJobFile : jobFile)(name, ident), { flag: 'wx' });
  writeFileSync(join(root, spec), (files ? filesSpecFile : specFile)(name, ident), { flag: 'wx' });
  writeFileSync(join(root, registryFile), newRegistry);
  if (docs) writeFileSync(join(root, docsFile), docs);

  console.log(
    [
      `new:job: added job type "${name}" (export ${ident}), live in validation, GET /v1/job-types and the worker after the next build:`,
      files
        ? `  created ${file}   the declaration, with a runnable example that takes a file and returns one`
        : `  created ${file}   the declaration, with a runnable example body that reports progress`,
      `  created ${spec}   its unit test`,
      `  edited  ${registryFile}   import and coreJobs entry`,
      docs
        ? `  edited  ${docsFile}   a row in its job types table`
        : `  ${docsFile} has no "| Type |" table under "## The job types": document ${name} where you document your API`,
      '',
      'Next:',
      `  1. ${file}: replace the example with the real work: description, input and output schemas, run`,
      '     (pure; load heavy libraries inside it), timeoutMs, cacheTtlSeconds; a `queue` of its own if its jobs are long or bursty.',
      ...(files ? ['     Its files: each one\'s maxBytes and accepted types; a service with such types needs a blob store (BLOB_STORE_URL).'] : []),
      `  2. ${spec}: test the real run and schema.`,
      `  3. ${docsFile}: the ${name} row (input and result).`,
      '  4. npm test',
    ].join('\n'),
  );
}

main();
