const Sequencer = require('@jest/test-sequencer').default;

/**
 * The order suites run in. The `serial` lane of `npm test` (TEST_SERIAL_ORDER, set by
 * jest.config.js) runs its suites in the order that list gives; otherwise Jest's own order:
 * failed first, then the longest (by its timing cache, or by file size on a clean clone).
 */
class LaneSequencer extends Sequencer {
  sort(tests) {
    const order = process.env.TEST_SERIAL_ORDER?.split(',');
    if (process.env.TEST_LANE !== 'serial' || !order) return super.sort(tests);
    const rank = (test) => {
      const i = order.findIndex((part) => test.path.includes(`/${part}`));
      return i === -1 ? order.length : i;
    };
    return [...tests].sort((a, b) => rank(a) - rank(b) || a.path.localeCompare(b.path));
  }
}

module.exports = LaneSequencer;
