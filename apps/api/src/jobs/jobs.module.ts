import { Module } from '@nestjs/common';
import { CacheModule } from '@app/cache';
import { Lifecycle } from '@app/health';
import { MetricsModule } from '@app/metrics';
import { Backlog } from './backlog';
import { JobCancels } from './job-cancels';
import { JobExpiry } from './job-expiry';
import { JobListing } from './job-listing';
import { JobNotices } from './job-notices';
import { JobOwners } from './job-owners';
import { JobReads } from './job-reads';
import { JobStore } from './job-store';
import { JobsController } from './jobs.controller';
import { ListingController } from './listing.controller';
import { JobsService } from './jobs.service';
import { QueueMetrics } from './queue.metrics';
import { ReplicaAck } from './replica-ack';
import { SubmitHooks } from './submit-hooks';
import { SubmitPipeline } from './submit-pipeline';
import { SubmissionMetrics } from './submission.metrics';

/**
 * The core of the API: submit, read, wait for and cancel jobs. Capabilities import it for what they
 * build on (the submit pipeline, job reads and notices) and lend it their hooks (see SubmitHooks).
 */
@Module({
  imports: [CacheModule, MetricsModule],
  controllers: [JobsController, ListingController],
  providers: [
    Lifecycle,
    JobNotices,
    SubmitPipeline,
    SubmitHooks,
    JobStore,
    JobOwners,
    Backlog,
    ReplicaAck,
    JobsService,
    JobReads,
    JobCancels,
    JobExpiry,
    JobListing,
    QueueMetrics,
    SubmissionMetrics,
  ],
  exports: [Lifecycle, JobNotices, SubmitPipeline, SubmitHooks, JobStore, JobOwners, JobsService, JobReads, SubmissionMetrics],
})
export class JobsModule {}
