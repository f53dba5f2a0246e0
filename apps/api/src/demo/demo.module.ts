import { Module } from '@nestjs/common';
import { DemoController } from './demo.controller';
import { LoopMonitor } from '@app/metrics';

/** The /demo page and its two probes. Imported only when DEMO=true (never in production: see config). */
@Module({
  controllers: [DemoController],
  providers: [LoopMonitor],
})
export class DemoModule {}
