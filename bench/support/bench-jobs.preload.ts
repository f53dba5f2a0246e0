import { join } from 'node:path';
import { isMainThread } from 'node:worker_threads';
import type * as DefineJobModule from '../../libs/jobs/src/define-job';
import type * as RegistryModule from '../../libs/jobs/src/registry';
import { declareBenchJobs } from './bench-jobs';

/**
 * `node --require` of the template's apps as the bench starts them (startTemplate), which Node runs
 * in every pool thread too: adds the bench's job types (./bench-jobs) to the registry of the build in
 * BENCH_JOBS_DIST before the app reads it. why here, not in libs/jobs: no type exists for the bench
 * alone in the apps a service ships; why that build's defineJob: an earlier build (BENCH_BEFORE_DIST)
 * gets definitions of its own shape.
 *
 * Also, in the app's main thread: SIGUSR2 runs a full garbage collection (the bench starts the apps
 * with --expose-gc), so the memory soak reads the heap still referenced after each chunk, not what
 * the collector has yet to free (heapAfterGc in scenarios/memory.ts).
 */
if (isMainThread) process.on('SIGUSR2', () => (globalThis as { gc?: () => void }).gc?.());
const dist = process.env.BENCH_JOBS_DIST;
if (dist) {
  const { defineJob } = require(join(dist, 'libs', 'jobs', 'src', 'define-job.js')) as typeof DefineJobModule;
  const registry = require(join(dist, 'libs', 'jobs', 'src', 'registry.js')) as typeof RegistryModule;
  const jobs = Object.values(declareBenchJobs(defineJob));
  // why both lists: allJobs (pool threads, CHAOS_JOBS=true) was copied from coreJobs when the registry loaded.
  for (const list of [registry.coreJobs, registry.allJobs]) (list as unknown as unknown[]).push(...jobs);
}
