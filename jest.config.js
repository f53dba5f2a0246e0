/** Unit tests sit beside the code (*.spec.ts); end-to-end tests run the built apps against Redis (test/). */
const swc = [
  '@swc/jest',
  {
    jsc: {
      parser: { syntax: 'typescript', decorators: true },
      transform: { legacyDecorator: true, decoratorMetadata: true },
      target: 'es2022',
    },
    module: { type: 'commonjs' },
  },
];

const shared = {
  // why: Nest 12 ships ES modules only. The built apps load them through Node's require(esm); Jest's
  // own module loader can only with --experimental-vm-modules (vm.SourceTextModule is still behind
  // that flag on Node 26), so it compiles them to CommonJS like our own sources instead.
  transform: { '^.+\\.(ts|js|mjs)$': swc },
  transformIgnorePatterns: ['/node_modules/(?!(@nestjs|nestjs-pino)/)'],
  moduleNameMapper: { '^@app/([a-z-]+)$': '<rootDir>/libs/$1/src' },
  testEnvironment: 'node',
};

module.exports = {
  projects: [
    { ...shared, displayName: 'unit', testMatch: ['<rootDir>/{apps,libs}/**/*.spec.ts'] },
    {
      ...shared,
      displayName: 'e2e',
      testMatch: ['<rootDir>/test/**/*.e2e-spec.ts'],
      globalSetup: '<rootDir>/test/support/global-setup.ts',
      globalTeardown: '<rootDir>/test/support/global-teardown.ts',
      slowTestThreshold: 30,
    },
  ],
  testTimeout: 60_000,
};
