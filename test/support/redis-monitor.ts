import IORedis from 'ioredis';

export interface MonitoredCommand {
  /** The command and its arguments, as MONITOR prints them. */
  args: string[];
  /** CLIENT SETNAME of the connection that sent it (`lua` inside scripts, `unnamed` without a name). */
  connection: string;
}

/**
 * Every command a Redis executes while it watches, in order, with the name of the connection that
 * sent it (MONITOR). For counting what one request costs in Redis: use it on a Redis of the test's own.
 */
export class RedisMonitor {
  private readonly seen: Array<{ args: string[]; source: string }> = [];

  private constructor(
    private readonly admin: IORedis,
    private readonly monitor: IORedis,
  ) {
    monitor.on('monitor', (_time: string, args: string[], source: string) => this.seen.push({ args, source }));
  }

  static async start(url: string): Promise<RedisMonitor> {
    const admin = new IORedis(url, { maxRetriesPerRequest: 1 });
    return new RedisMonitor(admin, await admin.monitor()); // ioredis opens a connection of its own for MONITOR
  }

  /** Stops watching; the commands seen, each with its connection's name. */
  async stop(): Promise<MonitoredCommand[]> {
    await new Promise((resolve) => setTimeout(resolve, 200)); // MONITOR's lines trail the replies a little
    this.monitor.disconnect();
    const names = new Map<string, string>();
    for (const line of ((await this.admin.client('LIST')) as string).split('\n')) {
      const addr = /addr=(\S+)/.exec(line)?.[1];
      if (addr) names.set(addr, /name=(\S*)/.exec(line)?.[1] || 'unnamed');
    }
    this.admin.disconnect();
    return this.seen.map(({ args, source }) => ({ args, connection: source === 'lua' ? 'lua' : (names.get(source) ?? 'unnamed') }));
  }
}
