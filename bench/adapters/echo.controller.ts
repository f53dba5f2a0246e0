import { Body, Controller, HttpCode, Inject, Param, Post } from '@nestjs/common';
import type { ApiError as ApiErrorClass } from '../../apps/api/src/http/api-error';
import type { JobView } from '../../apps/api/src/jobs/job-view';
import type { JobRegistry } from '../../libs/jobs/src';

export const ECHO_REGISTRY = Symbol('ECHO_REGISTRY');
export const ECHO_API_ERROR = Symbol('ECHO_API_ERROR');

/**
 * What a cache hit answers with, as a constant: same fields and about the same size as the view of a
 * cached `fibonacci` result, so the ceiling serializes what a hit serializes.
 */
const CONSTANT: JobView = Object.freeze({
  id: '6f1c2d3e-4b5a-4c7d-8e9f-0a1b2c3d4e5f',
  type: 'fibonacci',
  status: 'completed',
  progress: 100,
  result: 75025,
  cached: true,
  attempts: 1,
  createdAt: '2026-01-01T00:00:00.000Z',
  startedAt: '2026-01-01T00:00:00.001Z',
  finishedAt: '2026-01-01T00:00:00.002Z',
}) as JobView;

/**
 * The fair ceiling for a cache hit: a POST of the same API that validates its body with the job
 * type's own zod schema (as a submission does) and answers a constant. Bench-only (echo-api.main.ts).
 */
@Controller('bench/echo')
export class EchoController {
  constructor(
    @Inject(ECHO_REGISTRY) private readonly registry: JobRegistry,
    @Inject(ECHO_API_ERROR) private readonly ApiError: typeof ApiErrorClass,
  ) {}

  @Post(':type')
  @HttpCode(200)
  echo(@Param('type') type: string, @Body() body: unknown): JobView {
    const def = this.registry.get(type);
    if (!def) throw new this.ApiError('UNKNOWN_JOB_TYPE', `No job type named "${type}"`);
    if (!def.input.safeParse(body).success) throw new this.ApiError('INVALID_INPUT', `The input for "${type}" is invalid`);
    return CONSTANT;
  }
}
