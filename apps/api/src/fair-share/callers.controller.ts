import { Controller, Get, Inject } from '@nestjs/common';
import { ApiOperation, ApiResponse, ApiTags } from '../http/openapi.recorder';
import { CONFIG, type Config } from '@app/config';
import { callerShares } from '@app/queue';
import type { RedisClient } from '@app/redis';
import { ApiProblems } from '../http/openapi.decorators';
import { JobQueues, QUEUE_REDIS } from '../queues/queue.providers';
import { limitsOf } from './caller-limits';
import { CallerShares } from './caller-shares';

/** One API key's share of one queue, as GET /admin/callers shows it. */
export interface CallerView {
  caller: string;
  waiting: number;
  running: number;
  limits: { concurrency: number; maxQueued: number };
}

export interface CallersAnswer {
  engaged: boolean;
  queues: Array<{ queue: string; callers: CallerView[] }>;
}

const COUNT = { type: 'integer', minimum: 0 } as const;
const LIMIT = { type: 'integer', minimum: 0 } as const;

const ANSWER = {
  type: 'object',
  required: ['engaged', 'queues'],
  properties: {
    engaged: {
      type: 'boolean',
      description: 'Whether fair share is on: `API_KEYS` set, with two or more keys or a per-key limit. Off, jobs go to each queue as they are, and every `callers` is empty.',
    },
    queues: {
      type: 'array',
      items: {
        type: 'object',
        required: ['queue', 'callers'],
        properties: {
          queue: { type: 'string' },
          callers: {
            type: 'array',
            description: 'Each key of `API_KEYS`, in their order.',
            items: {
              type: 'object',
              required: ['caller', 'waiting', 'running', 'limits'],
              properties: {
                caller: { type: 'string', description: 'The key’s name.' },
                waiting: { ...COUNT, description: 'Its jobs waiting in its share (in BullMQ, delayed jobs).' },
                running: { ...COUNT, description: 'Its jobs released to workers and not finished (for a key without a concurrency limit, until their run ends).' },
                limits: {
                  type: 'object',
                  required: ['concurrency', 'maxQueued'],
                  description: 'Its limits in each queue (`CALLER_LIMITS`, else `CALLER_CONCURRENCY` and `CALLER_MAX_QUEUED`); 0 is no limit.',
                  properties: { concurrency: LIMIT, maxQueued: LIMIT },
                },
              },
            },
          },
        },
      },
    },
  },
};

/**
 * The per-caller view of fair share (docs/configuration.md#fair-share-between-callers) for admin keys
 * (registerAdminAccess guards /admin/*): each key's share of each queue and its limits.
 */
@ApiTags('admin')
@Controller('admin/callers')
export class CallersController {
  constructor(
    private readonly shares: CallerShares,
    private readonly queues: JobQueues,
    @Inject(QUEUE_REDIS) private readonly redis: RedisClient,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  @Get()
  @ApiOperation({
    summary: 'Each API key’s share of each queue (admin keys)',
    description: 'For fair share between callers: per queue, each key of `API_KEYS` with its jobs waiting in its share, its jobs running, and its limits. One Redis call per queue, whatever the number of keys.',
  })
  @ApiResponse({ status: 200, description: 'Every queue, each key.', content: { 'application/json': { schema: ANSWER } } })
  @ApiProblems('QUEUE_UNAVAILABLE')
  async list(): Promise<CallersAnswer> {
    const engaged = this.shares.engaged;
    const queues = await Promise.all(
      this.queues.list().map(async ({ name }) => {
        // why no read when off: no job goes into a share then, and what Redis holds is from before.
        if (!engaged) return { queue: name, callers: [] };
        // why the keys of the configuration, not every caller Redis knows: the answer is bounded by
        // API_KEYS, as the gauges are; a key taken out of it is no longer anyone to be fair to.
        const counts = new Map((await callerShares(this.redis, this.config.redisPrefix, name)).map((share) => [share.caller, share]));
        return {
          queue: name,
          callers: this.config.apiKeys.map(({ name: caller }): CallerView => {
            const { concurrency, queued } = limitsOf(this.config, caller);
            const share = counts.get(caller);
            return { caller, waiting: share?.waiting ?? 0, running: share?.running ?? 0, limits: { concurrency, maxQueued: queued } };
          }),
        };
      }),
    );
    return { engaged, queues };
  }
}
