// @ts-check
/**
 * ESLint: only the rules that keep the project's shape (`npm run lint`, and a step of `npm test`).
 * Style is left to review; the type check is tsc's (`npm run lint` runs both).
 */
import tseslint from 'typescript-eslint';

export default [
  { ignores: ['**/dist/**', 'bench/.build/**'] },
  {
    files: ['**/*.ts', '**/*.mjs'],
    languageOptions: { parser: tseslint.parser },
    plugins: { '@typescript-eslint': tseslint.plugin },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // why no separate `import type` line: one line per module, with inline `type` (the house style).
      'no-duplicate-imports': 'error',
      // why ignoreRestSiblings: `({ problem, ...rest }) => rest` is how a field is dropped, not a leftover.
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
    },
  },
  {
    // The piscina thread entry (job-pool.ts loads thread.js) and the thread-* files it pulls in.
    files: ['apps/worker/src/pool/thread.ts', 'apps/worker/src/pool/thread-*.ts'],
    ignores: ['**/*.spec.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              // why piscina: it is the host that runs this file; its `workerData` is how the pool configures a thread.
              // why type imports pass: they are erased, so nothing more is loaded into the thread.
              regex: '^(?!node:|@app/(jobs|blobs)$|piscina$|\\./thread-)',
              allowTypeImports: true,
              message: 'The pool thread imports only @app/jobs, @app/blobs, node: built-ins, piscina and its thread-* siblings: no Nest, Redis or OpenTelemetry in the thread.',
            },
          ],
        },
      ],
    },
  },
  {
    // What `npm run bench` compiles (bench/tsconfig.json, types: node only) from test/support: no Jest globals there.
    files: ['bench/**/*.ts', 'test/support/{apps,cpu-log,otlp-receiver,redis,test-run,wait}.ts'],
    rules: {
      'no-restricted-globals': [
        'error',
        ...['describe', 'it', 'test', 'expect', 'jest', 'beforeAll', 'beforeEach', 'afterAll', 'afterEach'].map((name) => ({
          name,
          message: "The bench compiles this file without Jest's types: keep Jest's globals in test-only files (e.g. test/support/apps-per-case.ts).",
        })),
      ],
    },
  },
  {
    // The docs capability loads @nestjs/swagger when it builds the document; the rest of the API takes
    // its decorators from http/openapi.recorder.ts, so an API without API_DOCS never loads it.
    files: ['apps/api/src/**/*.ts'],
    ignores: ['apps/api/src/docs/**'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: [
            {
              name: '@nestjs/swagger',
              allowTypeImports: true,
              message: 'Take the decorators from http/openapi.recorder.ts: only the docs capability (apps/api/src/docs/) loads @nestjs/swagger.',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['libs/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        { patterns: [{ regex: '(^|/)apps(/|$)', message: 'libs never import apps: move what both need into a lib.' }] },
      ],
    },
  },
  {
    // Pool threads load libs/blobs to read and write job files (see thread.ts): nothing in it may load Nest.
    files: ['libs/blobs/src/**/*.ts'],
    ignores: ['**/*.spec.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            { regex: '(^|/)apps(/|$)', message: 'libs never import apps: move what both need into a lib.' },
            {
              // why type imports pass: they are erased (BlobTarget from @app/config, whose index loads Nest).
              regex: '^(@nestjs/|@app/)',
              allowTypeImports: true,
              message: 'libs/blobs is loaded by pool threads: no Nest, and other @app libs for types only.',
            },
          ],
        },
      ],
    },
  },
];
