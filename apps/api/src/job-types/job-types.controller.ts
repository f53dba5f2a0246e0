import { Controller, Get, Inject } from '@nestjs/common';
import { z } from 'zod';
import { CONFIG, type Config } from '@app/config';
import { JobRegistry } from '@app/jobs';

export interface JobTypeView {
  type: string;
  version: number;
  description: string;
  inputSchema: unknown;
  outputSchema: unknown;
  timeoutMs: number;
  cacheTtlSeconds: number;
  maxAttempts: number;
}

/** GET /v1/job-types: every registered type, derived from its declaration. */
@Controller('v1/job-types')
export class JobTypesController {
  private readonly types: JobTypeView[];

  constructor(registry: JobRegistry, @Inject(CONFIG) config: Config) {
    this.types = registry.list().map((def) => ({
      type: def.name,
      version: def.version,
      description: def.description,
      inputSchema: z.toJSONSchema(def.input, { io: 'input', unrepresentable: 'any' }),
      outputSchema: z.toJSONSchema(def.output, { io: 'output', unrepresentable: 'any' }),
      timeoutMs: Math.min(def.timeoutMs, config.jobTimeoutMs),
      cacheTtlSeconds: def.cacheTtlSeconds,
      maxAttempts: def.retry.attempts,
    }));
  }

  @Get()
  list(): JobTypeView[] {
    return this.types;
  }
}
