import { Periodic } from './periodic';

/** A task that runs until its test says so: how many runs started, and the signal of the last. */
function heldTask() {
  const runs: Array<{ signal: AbortSignal; finish: (error?: Error) => void }> = [];
  const task = (signal: AbortSignal) =>
    new Promise<void>((resolve, reject) => runs.push({ signal, finish: (error) => (error ? reject(error) : resolve()) }));
  return { task, runs };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('Periodic', () => {
  beforeEach(() => jest.useFakeTimers({ doNotFake: ['nextTick', 'queueMicrotask', 'setImmediate'] }));
  afterEach(() => jest.useRealTimers());

  it('runs the task every interval, skipping the ticks that come while a run is going', async () => {
    const { task, runs } = heldTask();
    const periodic = new Periodic(1000, task, () => undefined);
    periodic.start();
    jest.advanceTimersByTime(999);
    expect(runs).toHaveLength(0);
    jest.advanceTimersByTime(1);
    expect(runs).toHaveLength(1);
    jest.advanceTimersByTime(5000);
    expect(runs).toHaveLength(1);
    runs[0].finish();
    await settle();
    jest.advanceTimersByTime(1000);
    expect(runs).toHaveLength(2);
    runs[1].finish();
    await periodic.stop();
  });

  it('hands a failed run to onError, and the next tick runs again', async () => {
    const { task, runs } = heldTask();
    const errors: unknown[] = [];
    const periodic = new Periodic(1000, task, (error) => errors.push(error));
    periodic.start();
    jest.advanceTimersByTime(1000);
    runs[0].finish(new Error('Redis went away'));
    await settle();
    expect(errors).toEqual([new Error('Redis went away')]);
    jest.advanceTimersByTime(1000);
    expect(runs).toHaveLength(2);
    runs[1].finish();
    await periodic.stop();
  });

  it('on stop, aborts the running one, waits for it to end, and runs no more', async () => {
    const { task, runs } = heldTask();
    const periodic = new Periodic(1000, task, () => undefined);
    periodic.start();
    jest.advanceTimersByTime(1000);
    let stopped = false;
    const stopping = periodic.stop().then(() => (stopped = true));
    expect(runs[0].signal.aborted).toBe(true);
    await settle();
    expect(stopped).toBe(false);
    runs[0].finish();
    await stopping;
    jest.advanceTimersByTime(10_000);
    expect(runs).toHaveLength(1);
  });

  it('stops at once when it never started, or nothing runs', async () => {
    await new Periodic(1000, heldTask().task, () => undefined).stop();
    const idle = new Periodic(1000, heldTask().task, () => undefined);
    idle.start();
    await idle.stop();
  });
});
