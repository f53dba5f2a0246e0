import type { EnvironmentContext, JestEnvironmentConfig } from '@jest/environment';
import { TestEnvironment } from 'jest-environment-node';
import { logCpu, processCpu, suiteName } from './cpu-log';

/**
 * Jest's node environment, measuring one suite's CPU (jest.config.js uses it when TEST_CPU_LOG is set):
 * its Jest process's own (the suite's code and its transform) and that of the children it reaped
 * (apps, redis-servers, builds and installs in copies), from its set-up to its teardown, which runs
 * after the suite's last afterAll has stopped what it started.
 */
export default class CpuEnvironment extends TestEnvironment {
  private readonly suite: string;
  private start = { self: 0, children: 0, wall: 0 };

  constructor(config: JestEnvironmentConfig, context: EnvironmentContext) {
    super(config, context);
    this.suite = suiteName(context.testPath);
  }

  override async setup(): Promise<void> {
    this.start = { self: processCpu('self')!, children: processCpu('self', true)! - processCpu('self')!, wall: Date.now() };
    await super.setup();
  }

  override async teardown(): Promise<void> {
    await super.teardown();
    const self = processCpu('self')!;
    const children = processCpu('self', true)! - self;
    logCpu({
      suite: this.suite,
      kind: 'suite',
      selfCpu: round(self - this.start.self),
      childrenCpu: round(children - this.start.children),
      wallS: round((Date.now() - this.start.wall) / 1000),
    });
  }
}

const round = (s: number) => Math.round(s * 100) / 100;
