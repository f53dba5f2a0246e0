import { Injectable } from '@nestjs/common';
import { type FileRef, hashesOf } from '@app/blobs';
import { Lifecycle } from '@app/health';
import { canonicalJson, JobDefinition, JobRegistry } from '@app/jobs';
import { ApiError } from '../http/api-error';
import { ServerTiming } from '../http/server-timing';
import { PreparedJob, prepareJob } from './job-input';
import { JobReads } from './job-reads';
import { isFinal, JobView } from './job-view';
import { Submission } from './new-job';
import { type AcceptOptions, SubmitPipeline } from './submit-pipeline';
import { type IdempotencyKey, SubmitHooks } from './submit-hooks';
import { SubmissionMetrics, type SubmissionOutcome } from './submission.metrics';

export interface SubmitOptions {
  /** Who submits: with API keys, the job's owners grow by this scope (see JobOwners). */
  scope: string;
  waitSeconds: number;
  /** What the POST carries into the job besides its input (see Submission). */
  submission: Submission;
  timing?: ServerTiming;
  /** The request's Idempotency-Key: a retry with it gets the same job. */
  idempotency?: IdempotencyKey;
  /** The request's Callback-Url (registered by the controller): part of what an Idempotency-Key covers. */
  callbackUrl?: string;
  /** The files a multipart submission stored (see FileIntake), by name. */
  files?: Readonly<Record<string, FileRef>>;
}

/** A submission's answer, and what it became (for jobs_submitted_total). */
interface Submitted {
  view: JobView;
  outcome: SubmissionOutcome;
}

/** Submissions as the HTTP API sees them: one job in, its view out (reads: JobReads; cancels: JobCancels). */
@Injectable()
export class JobsService {
  constructor(
    private readonly registry: JobRegistry,
    private readonly lifecycle: Lifecycle,
    private readonly pipeline: SubmitPipeline,
    private readonly reads: JobReads,
    private readonly hooks: SubmitHooks,
    private readonly metrics: SubmissionMetrics,
  ) {}

  /**
   * Validates `body` as the input of `type`, answers from the cache when it can, and otherwise
   * enqueues the job, joining an identical job already queued or running (single flight). With an
   * Idempotency-Key, a retry gets the job the first request got, whatever became of it.
   */
  async submit(type: string, body: unknown, options: SubmitOptions): Promise<JobView> {
    const def = this.definition(type);
    // Invalid input, backlog full, Redis away: whatever throws was rejected.
    let outcome: SubmissionOutcome = 'rejected';
    try {
      const submitted = await this.submitAs(def, body, options);
      outcome = submitted.outcome;
      return submitted.view;
    } finally {
      this.metrics.submission(def.name, outcome);
    }
  }

  private async submitAs(def: JobDefinition, body: unknown, options: SubmitOptions): Promise<Submitted> {
    const job = prepareJob(def, body, options.scope, options.files);
    options.timing?.mark('validate');
    this.reads.assertRedisUp();
    if (!options.idempotency) return this.enqueue(job, options);
    // What a retry under the key must repeat; why the files too: other files are another request (a 422).
    const request = [`POST /v1/jobs/${def.name}`, job.inputJson, ...(options.callbackUrl ? [`callback ${options.callbackUrl}`] : [])];
    if (job.files) request.push(`files ${canonicalJson(hashesOf(job.files))}`);
    let first: Submitted | undefined;
    const id = await this.hooks.idempotency.once(options.idempotency, request, async (claim) => {
      first = await this.enqueue(job, { ...options, waitSeconds: 0 }, { idFor: () => claim.plannedId, takeover: claim.takeover, adding: claim.adding });
      return first.view.id;
    });
    if (first?.view.id === id && (isFinal(first.view) || options.waitSeconds === 0)) return first;
    // A retry under the key gets the job the first request got, as its caller may see it now.
    let view = await this.reads.asSeenBy(await this.reads.get(id), options.scope);
    if (options.waitSeconds > 0 && !isFinal(view)) {
      view = await this.reads.asSeenBy(await this.reads.waitUntilFinal(id, options.waitSeconds * 1000, options.timing), options.scope);
    }
    return { view, outcome: first?.outcome ?? 'joined' };
  }

  /** Whether `type` is a registered type that takes files (its submissions are multipart). */
  takesFiles(type: string): boolean {
    const def = this.registry.get(type);
    return def !== undefined && Object.keys(def.files).length > 0;
  }

  /** The definition of a registered type, if this replica takes work: else a 404 or 503 problem. */
  definition(type: string): JobDefinition {
    const def = this.registry.get(type);
    if (!def) throw new ApiError('UNKNOWN_JOB_TYPE', `No job type named "${type}"; GET /v1/job-types lists them`);
    if (this.lifecycle.shuttingDown) throw new ApiError('SHUTTING_DOWN', 'This replica is shutting down', { retryAfterSeconds: 1 });
    return def;
  }

  /** Answers `job` from the cache, or enqueues it (or joins an identical one in flight), and waits for it if asked. */
  private async enqueue(job: PreparedJob, options: SubmitOptions, claim?: Pick<AcceptOptions, 'idFor' | 'takeover' | 'adding'>): Promise<Submitted> {
    const { scope, submission, timing, waitSeconds } = options;
    const [outcome] = await this.pipeline.accept(job.def, [job], { scope, submission, timing, wait: waitSeconds > 0, ...claim });
    const view = await this.reads.answer(outcome, waitSeconds * 1000, job.def.queue, timing);
    return { view, outcome: outcome.kind };
  }
}
