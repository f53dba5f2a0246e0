import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest, preHandlerAsyncHookHandler } from 'fastify';
import type { Config } from '@app/config';
import type { JobRegistry } from '@app/jobs';
import type { JobData } from '@app/queue';
import { ApiError } from '../http/api-error';
import { sendProblem } from '../http/problem.reply';
import { prepareJob } from '../jobs/job-input';
import { newJob } from '../jobs/new-job';
import type { JobQueues } from '../queues/queue.providers';

/** The scope of jobs an admin adds through the dashboard (a `share: 'caller'` type's content key). */
export const DASHBOARD_SCOPE = 'dashboard';

type Params = { queueName: string; jobId?: string };

/**
 * Jobs added or edited through the dashboard (its API's `add` and `update-data`) become exactly what
 * an API submission of the same input would: the body's data is read as the job's input (or, as the
 * dashboard shows a job, as JobData whose `inputJson` is the input), validated by the type's schema,
 * and replaced by the data and options the API's own builder gives it. why: Bull Board writes any
 * data it is sent, and job data names the job's version and content key; a hand-made job must not
 * run an input its type refuses, or claim another input's key.
 */
export function validateDashboardWrites(fastify: FastifyInstance, base: string, queues: JobQueues, registry: JobRegistry, config: Config): void {
  const definitionOf = (name: unknown, queue: string) => {
    const def = typeof name === 'string' ? registry.get(name) : undefined;
    if (!def || def.queue !== queue) throw new ApiError('INVALID_INPUT', `No job type named ${JSON.stringify(name)} goes to queue "${queue}"`);
    return def;
  };
  const inputOf = (data: unknown): unknown => {
    const inputJson = (data as Partial<JobData> | null)?.inputJson;
    if (typeof inputJson !== 'string') return data;
    try {
      return JSON.parse(inputJson) as unknown;
    } catch {
      throw new ApiError('INVALID_INPUT', 'inputJson is not valid JSON');
    }
  };
  const guarded = (handler: (request: FastifyRequest, body: Record<string, unknown>) => Promise<void>): preHandlerAsyncHookHandler =>
    async function (request: FastifyRequest, reply: FastifyReply) {
      try {
        const body = request.body;
        if (typeof body !== 'object' || body === null) throw new ApiError('INVALID_INPUT', 'The body must be a JSON object');
        await handler(request, body as Record<string, unknown>);
      } catch (error) {
        sendProblem(error, request, reply);
        return reply;
      }
    };

  const add = guarded(async (request, body) => {
    const { queueName } = request.params as Params;
    const def = definitionOf(body.name, queueName);
    if (Object.keys(def.files).length > 0) throw new ApiError('INVALID_INPUT', `"${def.name}" takes files, which the dashboard cannot send; submit it through the API`);
    const job = newJob(prepareJob(def, inputOf(body.data), DASHBOARD_SCOPE), randomUUID(), { requestId: request.id }, config.jobRetentionSeconds);
    body.data = job.data;
    body.options = job.opts;
  });
  const updateData = guarded(async (request, body) => {
    const { queueName, jobId } = request.params as Params;
    const job = await queues.get(queueName).getJob(jobId!);
    if (!job) throw new ApiError('JOB_NOT_FOUND', `No job with id "${jobId}" in queue "${queueName}"`);
    if (job.data.chunks !== undefined) throw new ApiError('INVALID_INPUT', 'A fan-out job that has split into chunks cannot be edited');
    const def = definitionOf(job.name, queueName);
    const prepared = prepareJob(def, inputOf(body.jobData), job.data.scope ?? DASHBOARD_SCOPE, job.data.files);
    const { data } = newJob(prepared, job.id!, { requestId: request.id }, config.jobRetentionSeconds);
    // The job keeps its files and what ties it to a schedule or a parent; its input, version and key are the new ones.
    // why the key in the data: the job keeps its deduplication id, the old input's key, which the
    // worker would otherwise take for its content key (see JobData.key).
    body.jobData = { ...data, key: prepared.key, ...(job.data.schedule ? { schedule: job.data.schedule } : {}), ...(job.data.parent ? { parent: job.data.parent } : {}) };
  });

  fastify.addHook('onRoute', (route) => {
    const handler = route.url === `${base}/api/queues/:queueName/add` ? add : route.url === `${base}/api/queues/:queueName/:jobId/update-data` ? updateData : undefined;
    if (handler) route.preHandler = [...[route.preHandler ?? []].flat(), handler];
  });
}
