import { Controller, DynamicModule, Get, Module, OnApplicationShutdown, Provider } from '@nestjs/common';
import { BullModule, InjectQueue } from '@nestjs/bullmq';
import { Queue, QueueEvents } from 'bullmq';
import { MetricsModule } from '../../libs/metrics/src';
import { PeerJobsController } from './peer-jobs.controller';
import { PEER_QUEUE, PeerEnv } from './peer.queue';

/** The peers' API health routes (what a Kubernetes probe would call). */
@Controller('health')
export class PeerApiHealthController {
  constructor(
    @InjectQueue(PEER_QUEUE) private readonly queue: Queue,
    private readonly events: QueueEvents,
  ) {}

  @Get('live')
  live() {
    return { status: 'ok' };
  }

  /** Ready once the queue and its event stream are connected. */
  @Get('ready')
  async ready() {
    await Promise.all([this.queue.waitUntilReady(), this.events.waitUntilReady()]);
    return { status: 'ok' };
  }
}

export class QueueEventsCloser implements OnApplicationShutdown {
  constructor(private readonly events: QueueEvents) {}

  async onApplicationShutdown(): Promise<void> {
    await this.events.close();
  }
}

/** A QueueEvents to wait on, closed on shutdown. */
export function queueEventsProviders({ connection, prefix }: Pick<PeerEnv, 'connection' | 'prefix'>): Provider[] {
  return [
    { provide: QueueEvents, useFactory: () => new QueueEvents(PEER_QUEUE, { connection, prefix }) },
    { provide: QueueEventsCloser, useFactory: (events: QueueEvents) => new QueueEventsCloser(events), inject: [QueueEvents] },
  ];
}

/**
 * The peer's API: `BullModule.forRoot` + `registerQueue`, a QueueEvents for waiting, and the same
 * Prometheus /metrics as the template (prom-client's default metrics, whose event-loop lag comes
 * from `monitorEventLoopDelay`): one instrument, so the two APIs' loop delays compare directly.
 */
@Module({})
export class PeerApiModule {
  static forRoot({ connection, prefix }: PeerEnv): DynamicModule {
    return {
      module: PeerApiModule,
      imports: [MetricsModule, BullModule.forRoot({ connection, prefix }), BullModule.registerQueue({ name: PEER_QUEUE })],
      controllers: [PeerJobsController, PeerApiHealthController],
      providers: queueEventsProviders({ connection, prefix }),
    };
  }
}
