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
  // why only then: it measures each suite's CPU for TEST_CPU_LOG (see test/support/cpu-log.ts).
  testEnvironment: process.env.TEST_CPU_LOG ? '<rootDir>/test/support/cpu-environment.ts' : 'node',
};

/**
 * The suites that time what they measure or must have both cores to themselves (chaos, latency
 * under a flood, the bench smoke): `npm test` runs them one at a time, in this order, in a lane of
 * their own beside the others (see scripts/test.mjs and test/support/sequencer.js). The heaviest
 * comes last. TEST_LANE picks a lane; unset, every suite runs (`npx jest` alone, or a path). why
 * versions and schedules not here: they mostly wait (~12% of a core over a minute each); with the
 * parallel lane's three workers a clean clone's run took 308 s in that lane and 381 s in this one
 * with them, so the run waited on this one alone.
 */
const SERIAL = ['test/queues', 'test/chaos/', 'test/isolation', 'test/bench-smoke'];
/**
 * Long suites of the parallel lane that time nothing (builds and tests on clean copies, the fuzzer):
 * they start first, so the lane does not end waiting on one of them.
 */
const PARALLEL_FIRST = ['test/template', 'test/input/fuzz'];
const lane = process.env.TEST_LANE;
// why through the environment: the sequencer runs in Jest's process but reads no config of ours.
process.env.TEST_SERIAL_ORDER = SERIAL.join(',');
process.env.TEST_PARALLEL_FIRST = PARALLEL_FIRST.join(',');
if (lane !== undefined && lane !== 'serial' && lane !== 'parallel') throw new Error(`TEST_LANE must be serial or parallel, not "${lane}"`);
const serial = `/(${SERIAL.map((s) => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')).join('|')})`;
// The other lane's suites, as Jest's ignore patterns (full paths).
const laneIgnore = lane === undefined ? [] : lane === 'serial' ? [`^(?!.*${serial})`] : [serial];

module.exports = {
  testSequencer: '<rootDir>/test/support/sequencer.js',
  projects: [
    { ...shared, displayName: 'unit', testMatch: ['<rootDir>/{apps,libs}/**/*.spec.ts'], testPathIgnorePatterns: ['/node_modules/', ...laneIgnore] },
    {
      ...shared,
      displayName: 'e2e',
      testMatch: ['<rootDir>/test/**/*.e2e-spec.ts'],
      testPathIgnorePatterns: ['/node_modules/', ...laneIgnore],
      globalSetup: '<rootDir>/test/support/global-setup.ts',
      globalTeardown: '<rootDir>/test/support/global-teardown.ts',
      slowTestThreshold: 30,
    },
  ],
  testTimeout: 60_000,
};
