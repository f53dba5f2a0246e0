import IORedis from 'ioredis';

export interface Census {
  /** Commands each connection sent (by its CLIENT SETNAME name, or "unnamed"), per job. */
  perConnection: Record<string, number>;
  /** Commands run inside Lua scripts (BullMQ's), per job. */
  insideScripts: number;
  /** Commands each connection sent, by command name, per job. */
  byCommand: Record<string, Record<string, number>>;
}

/**
 * Counts the Redis commands `run` causes, by connection, with MONITOR. MONITOR slows Redis down, so
 * this runs apart from every timed measurement, and only on a Redis the bench started itself.
 */
export async function redisCensus(url: string, jobs: number, run: () => Promise<unknown>): Promise<Census> {
  const admin = new IORedis(url, { maxRetriesPerRequest: 1 });
  const names = new Map<string, string>();
  const refreshNames = async () => {
    const list = (await admin.client('LIST')) as string;
    for (const line of list.split('\n')) {
      const addr = /addr=(\S+)/.exec(line)?.[1];
      const name = /name=(\S*)/.exec(line)?.[1];
      if (addr) names.set(addr, name || 'unnamed');
    }
  };
  await refreshNames();
  const monitor = await admin.duplicate().monitor();
  const counts = new Map<string, Map<string, number>>();
  let insideScripts = 0;
  const seen: Array<[string, string]> = [];
  monitor.on('monitor', (_time: string, args: string[], source: string) => {
    if (source === 'lua') insideScripts++;
    else seen.push([source, String(args[0]).toLowerCase()]);
  });
  try {
    await run();
    await new Promise((r) => setTimeout(r, 100));
  } finally {
    monitor.disconnect();
  }
  await refreshNames();
  for (const [source, command] of seen) {
    const name = names.get(source) ?? 'unnamed';
    const byCommand = counts.get(name) ?? new Map<string, number>();
    byCommand.set(command, (byCommand.get(command) ?? 0) + 1);
    counts.set(name, byCommand);
  }
  admin.disconnect();
  const perJob = (n: number) => Math.round((n / jobs) * 100) / 100;
  const byCommand: Census['byCommand'] = {};
  const perConnection: Census['perConnection'] = {};
  for (const [name, commands] of counts) {
    byCommand[name] = Object.fromEntries([...commands].map(([c, n]) => [c, perJob(n)]));
    perConnection[name] = perJob([...commands.values()].reduce((a, b) => a + b, 0));
  }
  return { perConnection, insideScripts: perJob(insideScripts), byCommand };
}
