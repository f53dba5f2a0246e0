import { applyDecorators } from '@nestjs/common';
import { ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import { HealthController } from '@app/health';
import { MetricsController } from '@app/metrics';
import { schemaRef } from '../http/openapi.refs';

/** Applies method decorators to a controller method from outside the class. */
function describe(controller: { prototype: object }, method: string, ...decorators: MethodDecorator[]): void {
  applyDecorators(...decorators)(controller.prototype, method, Object.getOwnPropertyDescriptor(controller.prototype, method)!);
}

let described = false;

/**
 * The probes and /metrics, whose controllers live in libs the worker shares. why here and not as
 * decorators on them: the worker would then load @nestjs/swagger at start (0.4–0.9 s, ~8 MB here).
 */
export function describeOperationRoutes(): void {
  if (described) return;
  described = true;
  ApiTags('operations')(HealthController);
  ApiTags('operations')(MetricsController);
  describe(
    HealthController,
    'live',
    ApiOperation({ summary: 'Liveness: the event loop turns' }),
    ApiResponse({ status: 200, description: 'Alive.', content: { 'application/json': { schema: schemaRef('HealthLive') } } }),
  );
  describe(
    HealthController,
    'ready',
    ApiOperation({ summary: 'Readiness: Redis answers and the process is not shutting down', description: 'Not behind the API keys; keep it off the public ingress.' }),
    ApiResponse({ status: 200, description: 'Ready.', content: { 'application/json': { schema: schemaRef('HealthReady') } } }),
    ApiResponse({ status: 503, description: 'Not ready; `checks` says why.', content: { 'application/json': { schema: schemaRef('HealthReady') } } }),
  );
  describe(
    MetricsController,
    'metrics',
    ApiOperation({ summary: 'Prometheus metrics of this process', description: 'Not behind the API keys; keep it off the public ingress.' }),
    ApiResponse({ status: 200, description: 'Prometheus text format.', content: { 'text/plain': { schema: { type: 'string' } } } }),
  );
}
