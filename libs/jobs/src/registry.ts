import { chaos } from './chaos.job';
import { DEPLOYED_QUEUES, JobDefinition } from './define-job';
import { echo } from './echo.job';
import { fanOut } from './fan-out.job';
import { fileEcho } from './file-echo.job';
import { fibonacci } from './fibonacci.job';
import { inlineEcho } from './inline-echo.job';
import { markdown } from './markdown.job';
import { parallelSum } from './parallel-sum.job';
import { pbkdf2 } from './pbkdf2.job';
import { privateEcho } from './private-echo.job';
import { sort } from './sort.job';
import { spin } from './spin.job';
import { sum } from './sum.job';
import { sumRangeJob } from './sum-range.job';
import { thumbnail } from './thumbnail.job';

/** The job types this service offers. Adding one is a new `*.job.ts` file and one line here. */
export const coreJobs = [fibonacci, pbkdf2, sum, sort, sumRangeJob, parallelSum, markdown, thumbnail] as const;

/**
 * The types tests and drills run, registered only with CHAOS_JOBS=true (which production refuses):
 * chaos misbehaves on request; the others stand in for the examples (an echo, one shared only by its
 * caller, a long job on a second queue, a fan-out, an inline type and one that takes a file), so the tests need no example but fibonacci.
 */
export const testJobs = [chaos, echo, privateEcho, spin, fanOut, inlineEcho, fileEcho] as const;

/** Everything a pool thread can run: the core types plus the opt-in test types. */
export const allJobs = [...coreJobs, ...testJobs] as const;

export type JobName = (typeof allJobs)[number]['name'];
/** The declaration of one job type: `JobOf<'fibonacci'>`. */
export type JobOf<N extends JobName> = Extract<(typeof allJobs)[number], { name: N }>;
export type InputOf<N extends JobName> = Parameters<JobOf<N>['run']>[0];
export type OutputOf<N extends JobName> = Awaited<ReturnType<JobOf<N>['run']>>;
/** What a caller sends for `N`: its input schema's input, fields with defaults optional. */
export type SubmissionOf<N extends JobName> = JobOf<N> extends JobDefinition<N, unknown, unknown, infer S> ? S : never;

/** The set of job types one process serves. Refuses to exist with a doubled or nameless type. */
export class JobRegistry {
  private readonly byName = new Map<string, JobDefinition>();

  constructor(definitions: readonly JobDefinition[]) {
    for (const def of definitions) {
      if (typeof def?.run !== 'function' || !def.name) {
        throw new Error(`Job registry: a job type has no name or no run function (${JSON.stringify(def?.name)})`);
      }
      if (this.byName.has(def.name)) throw new Error(`Job registry: job type "${def.name}" is registered twice`);
      this.byName.set(def.name, def);
    }
    if (this.byName.size === 0) throw new Error('Job registry: no job types registered');
    for (const def of this.byName.values()) {
      const child = def.fanOut?.child;
      if (child && this.byName.get(child.name) !== child) {
        throw new Error(`Job registry: "${def.name}" fans out to "${child.name}", which is not registered`);
      }
    }
  }

  get(name: string): JobDefinition | undefined {
    return this.byName.get(name);
  }

  list(): JobDefinition[] {
    return [...this.byName.values()];
  }

  /** The queues these types go to, sorted: every queue some worker must consume. */
  queues(): string[] {
    return [...new Set(this.list().map((def) => def.queue))].sort();
  }

  /** Every queue a worker may consume, sorted: these types' and the deployed ones (DEPLOYED_QUEUES). */
  workerQueues(): string[] {
    return [...new Set([...this.queues(), ...DEPLOYED_QUEUES])].sort();
  }

  /** The types that take or return files: with any, the service needs a blob store (BLOB_STORE_URL). */
  fileTypes(): string[] {
    return this.list()
      .filter((def) => def.returnsFiles || Object.keys(def.files).length > 0)
      .map((def) => def.name);
  }

  static forConfig(options: { chaosJobs: boolean }): JobRegistry {
    return new JobRegistry(options.chaosJobs ? allJobs : coreJobs);
  }
}
