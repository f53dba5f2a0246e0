import { BadRequestException, NotFoundException } from '@nestjs/common';
import type { Job } from 'bullmq';
import { allJobs, JobDefinition, JobRegistry } from '../../libs/jobs/src';
import { benchJobs } from '../support/bench-jobs';
import { thumbnailBase64 } from './thumbnail-base64.job';

/**
 * The job types the baselines serve: the template's declarations and the bench's (as the bench's
 * template apps have them), so the work is identical; and the peer's base64 thumbnail (files scenario).
 */
export const baselineJobs = new JobRegistry([...allJobs, ...Object.values(benchJobs), thumbnailBase64]);

/** What the baselines answer for a job: the fields of the template's view the bench reads. */
export interface BaselineView {
  id: string;
  type: string;
  status: 'completed' | 'queued' | 'active' | 'failed';
  result?: unknown;
  attempts: number;
  createdAt: string;
  startedAt?: string;
  finishedAt?: string;
}

/** Validates `body` like the template does (404 for an unknown type, 400 for bad input). */
export function validated(type: string, body: unknown): { def: JobDefinition; input: unknown } {
  const def = baselineJobs.get(type);
  if (!def) throw new NotFoundException(`No job type named "${type}"`);
  const parsed = def.input.safeParse(body);
  if (!parsed.success) throw new BadRequestException(parsed.error.issues.slice(0, 20));
  return { def, input: parsed.data };
}

export const iso = (ms: number | undefined) => (ms ? new Date(ms).toISOString() : undefined);

/** The view of a BullMQ job in `state`, as the baselines built on BullMQ answer it. */
export const viewOfBullJob = (job: Job, state: string): BaselineView => ({
  id: job.id!,
  type: job.name,
  status: state === 'completed' || state === 'failed' || state === 'active' ? state : 'queued',
  result: job.returnvalue,
  attempts: job.attemptsMade,
  createdAt: iso(job.timestamp)!,
  startedAt: iso(job.processedOn),
  finishedAt: iso(job.finishedOn),
});
