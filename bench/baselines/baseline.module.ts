import { Controller, DynamicModule, Get, Header, Inject, Module, OnApplicationShutdown, Optional } from '@nestjs/common';
import { BullModule } from '@nestjs/bullmq';
import { QueueEvents } from 'bullmq';
import IORedis from 'ioredis';
import { type LoopDelay, LoopMonitor, MetricsModule } from '../../libs/metrics/src';
import { BASELINE_PREFIX, BASELINE_REDIS, INPROC_QUEUE } from './baseline.tokens';
import { InlineJobsController } from './inline-jobs.controller';
import { InprocJobsController, InprocProcessor } from './inproc-jobs';

export type BaselineMode = 'inline' | 'bullmq';

@Controller('health')
class BaselineHealthController {
  @Get('live')
  live() {
    return { status: 'ok' };
  }

  @Get('ready')
  ready() {
    return { status: 'ok' };
  }
}

/** The probes the template's /demo page polls on a baseline (`npm run demo`), as its own DemoController serves them. */
@Controller('demo')
class BaselineProbesController {
  constructor(private readonly loop: LoopMonitor) {}

  @Get('ping')
  @Header('cache-control', 'no-store')
  ping(): { ok: true; at: number } {
    return { ok: true, at: Date.now() };
  }

  @Get('loop')
  @Header('cache-control', 'no-store')
  loopDelay(): LoopDelay {
    return this.loop.latest();
  }
}

class ConnectionCloser implements OnApplicationShutdown {
  constructor(
    @Inject(BASELINE_REDIS) private readonly redis: IORedis,
    @Optional() @Inject(QueueEvents) private readonly events?: QueueEvents,
  ) {}

  async onApplicationShutdown(): Promise<void> {
    await this.events?.close();
    await this.redis.quit().catch(() => undefined);
  }
}

/**
 * A NestJS server doing the template's jobs the way a user would without it: `inline` in the
 * request handler, or `bullmq` in an @nestjs/bullmq processor inside the same process. It serves
 * the same /demo/ping and /demo/loop probes and Prometheus /metrics (event-loop lag) as the template.
 */
@Module({})
export class BaselineModule {
  static forRoot(options: { mode: BaselineMode; redisUrl: string; prefix: string }): DynamicModule {
    const url = new URL(options.redisUrl);
    const connection = { host: url.hostname, port: Number(url.port || 6379), password: url.password || undefined };
    const common = [
      { provide: BASELINE_PREFIX, useValue: options.prefix },
      { provide: BASELINE_REDIS, useFactory: () => new IORedis(options.redisUrl, { maxRetriesPerRequest: 1 }) },
    ];
    if (options.mode === 'inline') {
      return {
        module: BaselineModule,
        imports: [MetricsModule],
        controllers: [InlineJobsController, BaselineHealthController, BaselineProbesController],
        providers: [...common, LoopMonitor, ConnectionCloser],
      };
    }
    return {
      module: BaselineModule,
      imports: [
        MetricsModule,
        BullModule.forRoot({ connection, prefix: options.prefix }),
        BullModule.registerQueue({ name: INPROC_QUEUE }),
      ],
      controllers: [InprocJobsController, BaselineHealthController, BaselineProbesController],
      providers: [
        ...common,
        LoopMonitor,
        InprocProcessor,
        { provide: QueueEvents, useFactory: () => new QueueEvents(INPROC_QUEUE, { connection, prefix: options.prefix }) },
        ConnectionCloser,
      ],
    };
  }
}
