import { BlobSweeper } from './blob-sweeper';

describe('BlobSweeper', () => {
  afterEach(() => jest.useRealTimers());

  // why: a tick skipped because the last sweep still runs must not use up the hourly listing's turn.
  it('lists the store every 60th sweep it runs, whatever ticks a long sweep skipped', async () => {
    jest.useFakeTimers();
    const sweeper = new BlobSweeper({} as never, {} as never, { uploadTtlSeconds: 60, jobTimeoutMs: 1000 } as never, { warn: jest.fn() } as never);
    let finish: () => void = () => undefined;
    const calls: boolean[] = [];
    jest.spyOn(sweeper, 'sweep').mockImplementation(async ({ list }) => {
      calls.push(list);
      if (calls.length === 1) await new Promise<void>((resolve) => (finish = resolve));
      return { deleted: 0, adopted: 0, abandoned: 0 };
    });
    sweeper.onModuleInit();
    await jest.advanceTimersByTimeAsync(60 * 60_000); // the first sweep runs through 60 ticks
    finish();
    await jest.advanceTimersByTimeAsync(59 * 60_000);
    expect(calls.length).toBe(60);
    expect(calls.filter(Boolean)).toHaveLength(1);
    await sweeper.onApplicationShutdown();
  });

  // why: a listing of a large store takes minutes; shutdown waited for it to end, past its deadline.
  it('stops a running sweep at shutdown instead of waiting for it to end', async () => {
    jest.useFakeTimers();
    const sweeper = new BlobSweeper({} as never, {} as never, { uploadTtlSeconds: 60, jobTimeoutMs: 1000 } as never, { warn: jest.fn() } as never);
    // A sweep that runs until it is told to stop, as sweepBlobs does on its signal.
    jest.spyOn(sweeper, 'sweep').mockImplementation(
      ({ signal }) => new Promise((resolve) => signal?.addEventListener('abort', () => resolve({ deleted: 0, adopted: 0, abandoned: 0 }))),
    );
    sweeper.onModuleInit();
    await jest.advanceTimersByTimeAsync(60_000);
    expect(sweeper.sweep).toHaveBeenCalledTimes(1);
    jest.useRealTimers();
    const stopped = await Promise.race([sweeper.onApplicationShutdown().then(() => 'stopped'), new Promise((resolve) => setTimeout(resolve, 1000, 'still waiting'))]);
    expect(stopped).toBe('stopped');
  });
});
