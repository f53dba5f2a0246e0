import { Inject, Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { CONFIG, type Config } from '@app/config';
import { type Logger, LOGGER } from '@app/logging';
import { queueKeys } from '@app/queue';
import { type RedisClient, RedisConnections } from '@app/redis';
import { JobProcessor } from './job-processor';

/**
 * Hears cancel requests the API publishes and aborts the job if this worker runs it. The job may run
 * on any replica, so every worker listens; the one holding it terminates its thread.
 */
@Injectable()
export class CancelListener implements OnApplicationBootstrap {
  private readonly subscriber: RedisClient;
  private readonly logger: Logger;
  private readonly channel: string;

  constructor(
    private readonly processor: JobProcessor,
    @Inject(LOGGER) logger: Logger,
    @Inject(CONFIG) config: Config,
    connections: RedisConnections,
  ) {
    this.logger = logger.child({ context: CancelListener.name });
    this.channel = queueKeys(config.redisPrefix).cancelChannel;
    this.subscriber = connections.open('cancel', config.queueRedis, 'blocking', 'nest-offload:worker-cancel');
  }

  async onApplicationBootstrap(): Promise<void> {
    this.subscriber.on('message', (channel: string, jobId: string) => {
      if (channel === this.channel && this.processor.cancel(jobId)) this.logger.info({ jobId }, 'cancelling running job');
    });
    // why: not awaited: with Redis down at start-up ioredis subscribes once it connects.
    void this.subscriber.subscribe(this.channel).catch(() => undefined);
  }
}
