import { Controller, Get, Inject, Res } from '@nestjs/common';
import { HEALTH_INDICATORS, HealthIndicator } from './health.indicator';
import { Lifecycle } from './lifecycle';

type CheckResults = Record<string, 'ok' | string>;

/** Kubernetes probes. Liveness says the event loop turns; readiness says this replica can do its job. */
@Controller('health')
export class HealthController {
  constructor(
    @Inject(HEALTH_INDICATORS) private readonly indicators: HealthIndicator[],
    private readonly lifecycle: Lifecycle,
  ) {}

  @Get('live')
  live(): { status: 'ok' } {
    return { status: 'ok' };
  }

  @Get('ready')
  async ready(@Res({ passthrough: true }) res: { status(code: number): unknown }) {
    const checks: CheckResults = {};
    let ok = !this.lifecycle.shuttingDown;
    await Promise.all(
      this.indicators.map(async ({ name, check, critical = true }) => {
        checks[name] = await check().then(
          () => 'ok',
          (error: unknown) => {
            if (critical) ok = false;
            return `${critical ? '' : 'degraded: '}${error instanceof Error ? error.message : String(error)}`;
          },
        );
      }),
    );
    if (this.lifecycle.shuttingDown) checks.lifecycle = 'shutting down';
    res.status(ok ? 200 : 503);
    return { status: ok ? 'ok' : 'unavailable', checks };
  }
}
