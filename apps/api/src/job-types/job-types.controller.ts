import { Controller, Get, Inject } from '@nestjs/common';
import { ApiOperation, ApiResponse, ApiTags } from '../http/openapi.recorder';
import { z } from 'zod';
import { CONFIG, type Config } from '@app/config';
import { JobRegistry, knownVersions } from '@app/jobs';
import { schemaRef } from '../http/openapi.refs';

export interface JobTypeView {
  type: string;
  version: number;
  /** Every version whose queued jobs the workers still run, newest first. */
  runsVersions: number[];
  description: string;
  /** The queue its jobs go to (workers pick queues with WORKER_QUEUES). */
  queue: string;
  /** BullMQ priority within the queue (1 first), or null: taken before any prioritized job. */
  priority: number | null;
  inputSchema: unknown;
  outputSchema: unknown;
  /** Request bodies that show how to call it (the API docs show them too). */
  examples: readonly unknown[];
  timeoutMs: number;
  cacheTtlSeconds: number;
  /** Its jobs' default start deadline (a `Start-Within` header overrides it), or null: none. */
  startWithinMs: number | null;
  maxAttempts: number;
}

/** GET /v1/job-types: every registered type, derived from its declaration. */
@ApiTags('job types')
@Controller('v1/job-types')
export class JobTypesController {
  private readonly types: JobTypeView[];

  constructor(registry: JobRegistry, @Inject(CONFIG) config: Config) {
    this.types = registry.list().map((def) => ({
      type: def.name,
      version: def.version,
      runsVersions: knownVersions(def),
      description: def.description,
      queue: def.queue,
      priority: def.priority ?? null,
      inputSchema: z.toJSONSchema(def.input, { io: 'input', unrepresentable: 'any' }),
      outputSchema: z.toJSONSchema(def.output, { io: 'output', unrepresentable: 'any' }),
      examples: def.examples,
      timeoutMs: Math.min(def.timeoutMs, config.jobTimeoutMs),
      cacheTtlSeconds: def.cacheTtlSeconds,
      startWithinMs: def.startWithinMs ?? null,
      maxAttempts: def.retry.attempts,
    }));
  }

  @Get()
  @ApiOperation({ summary: 'List the job types', description: 'Each registered type with its JSON Schemas, queue, limits and the versions its workers run.' })
  @ApiResponse({ status: 200, description: 'Every registered type.', content: { 'application/json': { schema: { type: 'array', items: schemaRef('JobTypeView') } } } })
  list(): JobTypeView[] {
    return this.types;
  }
}
