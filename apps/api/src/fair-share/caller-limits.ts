import type { Config } from '@app/config';

/** One API key's fair-share limits in each queue; 0 is no limit. */
export interface CallerLimits {
  /** Jobs released to workers at once (CALLER_CONCURRENCY). */
  concurrency: number;
  /** Jobs waiting (CALLER_MAX_QUEUED). */
  queued: number;
}

/** The limits of the API key named `name`: its CALLER_LIMITS entries, else CALLER_CONCURRENCY and CALLER_MAX_QUEUED. */
export function limitsOf(config: Pick<Config, 'callerConcurrency' | 'callerMaxQueued' | 'callerLimits'>, name: string): CallerLimits {
  const own = (limit: 'concurrency' | 'queued') => config.callerLimits.find((entry) => entry.name === name && entry.limit === limit)?.value;
  return { concurrency: own('concurrency') ?? config.callerConcurrency, queued: own('queued') ?? config.callerMaxQueued };
}
