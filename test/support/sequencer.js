const Sequencer = require('@jest/test-sequencer').default;

/**
 * The order suites run in. The `serial` lane of `npm test` (TEST_SERIAL_ORDER, set by
 * jest.config.js) runs its suites in the order that list gives; the `parallel` lane starts with
 * TEST_PARALLEL_FIRST's, then Jest's own order: failed first, then the longest (by its timing
 * cache, or by file size on a clean clone).
 */
class LaneSequencer extends Sequencer {
  async sort(tests) {
    const lane = process.env.TEST_LANE;
    const order = (lane === 'serial' ? process.env.TEST_SERIAL_ORDER : lane === 'parallel' ? process.env.TEST_PARALLEL_FIRST : undefined)?.split(',');
    if (!order) return super.sort(tests);
    const rank = (test) => {
      const i = order.findIndex((part) => test.path.includes(`/${part}`));
      return i === -1 ? order.length : i;
    };
    const jestOrder = lane === 'parallel' ? await super.sort(tests) : [...tests].sort((a, b) => a.path.localeCompare(b.path));
    // why a stable sort of Jest's order: the suites not listed keep it.
    return jestOrder.map((test, index) => ({ test, index })).sort((a, b) => rank(a.test) - rank(b.test) || a.index - b.index).map(({ test }) => test);
  }
}

module.exports = LaneSequencer;
